//===- LoweredOpsTest.cpp - ONNX ops imported as compositions -------------===//
//
// DepthToSpace (DCR and CRD) and SpaceToDepth are imported as
// Reshape/Transpose/Reshape, InstanceNormalization and GroupNormalization
// as LayerNormalization with an affine step (frontend/OpLowering.cpp):
// hand-checked results through the reference executor, symbolic dims, the
// round trip, per-group (18) and per-channel (21) GroupNormalization
// parameters, and the errors naming the node.
//
//===----------------------------------------------------------------------===//
#include "NodeRunner.h"
#include "tests/reference/ImportAndRun.h"

using namespace solder;
using namespace solder::testing;

namespace {

using IV = std::vector<int64_t>;

/// Fills B with one node 'n' of Op (input x with Dims, output y).
void addBlockNode(ModelBuilder &B, const std::string &Op,
                  const std::vector<std::string> &Dims, const std::string &Mode,
                  int64_t Block) {
  B.input("x", Dims);
  auto &N = B.node(Op, {"x"}, {"y"}, "n");
  setInt(N, "blocksize", Block);
  if (!Mode.empty())
    setString(N, "mode", Mode);
  B.output("y");
}

/// Imports a one-node model and runs it on X.
Tensor runOne(int64_t Opset, const std::string &Op,
              const std::vector<std::string> &Dims, const Tensor &X,
              const std::string &Mode = "", int64_t Block = 2) {
  ModelBuilder B(Opset);
  addBlockNode(B, Op, Dims, Mode, Block);
  auto R = importAndRun(B, {X});
  return R.empty() ? Tensor() : R[0];
}

Tensor iota(llvm::ArrayRef<int64_t> Dims) {
  Tensor T(DType::F32, Dims);
  for (int64_t I = 0; I < T.numElements(); ++I)
    T.setDouble(I, double(I));
  return T;
}

TEST(LoweredOpsTest, DepthToSpaceModesOrderChannelsDifferently) {
  // Eight channels of one pixel into 2 channels of 2x2. DCR reads channel
  // b1*4 + b2*2 + c, CRD channel c*4 + b1*2 + b2.
  Tensor X = iota({1, 8, 1, 1});
  Tensor Dcr = runOne(13, "DepthToSpace", {"1", "8", "1", "1"}, X, "DCR");
  EXPECT_EQ(dimsOf(Dcr), (IV{1, 2, 2, 2}));
  expectValues(Dcr, {0, 2, 4, 6, 1, 3, 5, 7});
  Tensor Crd = runOne(13, "DepthToSpace", {"1", "8", "1", "1"}, X, "CRD");
  expectValues(Crd, {0, 1, 2, 3, 4, 5, 6, 7});
  // Before opset 11 there is no mode: DCR.
  Tensor Old = runOne(1, "DepthToSpace", {"1", "8", "1", "1"}, X);
  expectValues(Old, {0, 2, 4, 6, 1, 3, 5, 7});
}

TEST(LoweredOpsTest, DepthToSpaceInterleavesAcrossWidth) {
  // Four channels [0,1], [2,3], [4,5], [6,7] of a 1x2 image: row b1 of
  // the output interleaves channels 2*b1 and 2*b1 + 1.
  Tensor Y = runOne(13, "DepthToSpace", {"1", "4", "1", "2"},
                    iota({1, 4, 1, 2}), "DCR");
  EXPECT_EQ(dimsOf(Y), (IV{1, 1, 2, 4}));
  expectValues(Y, {0, 2, 1, 3, 4, 6, 5, 7});
}

TEST(LoweredOpsTest, SpaceToDepthGathersEachBlock) {
  // [[0..3], [4..7]]: channel bh*2 + bw holds x[bh][2*w + bw].
  Tensor Y =
      runOne(13, "SpaceToDepth", {"1", "1", "2", "4"}, iota({1, 1, 2, 4}));
  EXPECT_EQ(dimsOf(Y), (IV{1, 4, 1, 2}));
  expectValues(Y, {0, 2, 1, 3, 4, 6, 5, 7});
}

TEST(LoweredOpsTest, SymbolicBatchAndHeightRoundTrip) {
  ModelBuilder B(13);
  B.input("x", {"N", "3", "H", "4"});
  setInt(B.node("SpaceToDepth", {"x"}, {"s"}), "blocksize", 2);
  auto &D = B.node("DepthToSpace", {"s"}, {"y"});
  setInt(D, "blocksize", 2);
  setString(D, "mode", "DCR");
  B.output("s");
  B.output("y");
  ASSERT_IMPORTS(G, B);
  EXPECT_EQ(typeToString(G.lookup("s")->type()).substr(0, 8), "f32[N,12");
  Tensor X = iota({2, 3, 6, 4});
  auto R = runReference(G, {X});
  ASSERT_TRUE(bool(R)) << llvm::toString(R.takeError());
  EXPECT_EQ(dimsOf((*R)[0]), (IV{2, 12, 3, 2}));
  EXPECT_EQ(dimsOf((*R)[1]), (IV{2, 3, 6, 4}));
  EXPECT_EQ(toFloats((*R)[1]), toFloats(X));
}

std::string importErrorOf(const std::string &Op,
                          const std::vector<std::string> &Dims,
                          const std::string &Mode, int64_t Block) {
  ModelBuilder B(13);
  addBlockNode(B, Op, Dims, Mode, Block);
  return errorText(B.import());
}

TEST(LoweredOpsTest, BadInputsNameTheNode) {
  std::string E = importErrorOf("DepthToSpace", {"1", "6", "2", "2"}, "", 2);
  EXPECT_NE(E.find("DepthToSpace node 'n'"), std::string::npos) << E;
  EXPECT_NE(E.find("not a multiple of blocksize^2"), std::string::npos) << E;
  E = importErrorOf("DepthToSpace", {"1", "8", "2", "2"}, "XYZ", 2);
  EXPECT_NE(E.find("mode 'XYZ'"), std::string::npos) << E;
  E = importErrorOf("SpaceToDepth", {"1", "2", "3", "4"}, "", 2);
  EXPECT_NE(E.find("height (3) is not a multiple of blocksize"),
            std::string::npos)
      << E;
  E = importErrorOf("SpaceToDepth", {"2", "3", "4"}, "", 2);
  EXPECT_NE(E.find("rank 4"), std::string::npos) << E;
  E = importErrorOf("SpaceToDepth", {"1", "C", "4", "4"}, "", 2);
  EXPECT_NE(E.find("channel dim"), std::string::npos) << E;
  E = importErrorOf("SpaceToDepth", {"1", "2", "4", "4"}, "", 0);
  EXPECT_NE(E.find("blocksize must be positive"), std::string::npos) << E;
}

/// One normalization node 'n' on x (float Dims) with scale s and bias b.
ModelBuilder &addNormNode(ModelBuilder &B, const std::string &Op,
                          const std::vector<std::string> &Dims,
                          int64_t Groups) {
  B.input("x", Dims);
  B.input("s", {"P"});
  B.input("b", {"P"});
  auto &N = B.node(Op, {"x", "s", "b"}, {"y"}, "n");
  setFloat(N, "epsilon", 0);
  if (Groups)
    setInt(N, "num_groups", Groups);
  B.output("y");
  return B;
}

TEST(LoweredOpsTest, InstanceNormalizationPerChannel) {
  // Channel 0 [1, 3]: mean 2, variance 1; channel 1 [5, 9]: mean 7,
  // variance 4. Both normalize to [-1, 1], then scale [2, 0.5] and bias
  // [0, 10] per channel.
  for (int64_t Opset : {1, 6, 22}) {
    ModelBuilder B(Opset);
    addNormNode(B, "InstanceNormalization", {"N", "2", "2"}, 0);
    auto R = importAndRun(B, {make(DType::F32, {1, 2, 2}, {1, 3, 5, 9}),
                              make(DType::F32, {2}, {2, 0.5}),
                              make(DType::F32, {2}, {0, 10})});
    ASSERT_EQ(R.size(), 1u) << "opset " << Opset;
    EXPECT_EQ(dimsOf(R[0]), (IV{1, 2, 2}));
    expectValues(R[0], {-2, 2, 9.5, 10.5});
  }
}

TEST(LoweredOpsTest, GroupNormalizationParametersPerGroupThenPerChannel) {
  // Groups of two channels of one element: [1, 3] and [5, 7] both
  // normalize to [-1, 1].
  Tensor X = make(DType::F32, {1, 4, 1}, {1, 3, 5, 7});
  ModelBuilder B18(18);
  addNormNode(B18, "GroupNormalization", {"1", "4", "1"}, 2);
  auto R18 = importAndRun(
      B18, {X, make(DType::F32, {2}, {2, 3}), make(DType::F32, {2}, {1, -1})});
  ASSERT_EQ(R18.size(), 1u);
  expectValues(R18[0], {-1, 3, -4, 2});
  ModelBuilder B21(21);
  addNormNode(B21, "GroupNormalization", {"1", "4", "1"}, 2);
  auto R21 = importAndRun(B21, {X, make(DType::F32, {4}, {1, 2, 3, 4}),
                                make(DType::F32, {4}, {0, 0, 1, 1})});
  ASSERT_EQ(R21.size(), 1u);
  expectValues(R21[0], {-1, 2, -2, 5});
}

TEST(LoweredOpsTest, NormalizationsKeepStatisticsInFp32AndRefuseBadInputs) {
  ModelBuilder B(21);
  addNormNode(B, "GroupNormalization", {"1", "4", "3"}, 2);
  ASSERT_IMPORTS(G, B);
  Node *LN = firstNode(G, OpKind::LayerNormalization);
  ASSERT_TRUE(LN);
  EXPECT_EQ(LN->attrs().getInt("stash_type", 0), 1);
  EXPECT_EQ(LN->attrs().getInt("axis", 0), 2);
  // A static input keeps the result static at import, for the lowerings
  // of later nodes that need static dims (DepthToSpace, Einsum).
  EXPECT_EQ(typeToString(G.lookup("y")->type()), "f32[1,4,3]");

  ModelBuilder Odd(21);
  addNormNode(Odd, "GroupNormalization", {"1", "6", "3"}, 4);
  std::string E = errorText(Odd.import());
  EXPECT_NE(E.find("GroupNormalization node 'n'"), std::string::npos) << E;
  EXPECT_NE(E.find("not a multiple of num_groups"), std::string::npos) << E;
  ModelBuilder None(18);
  addNormNode(None, "GroupNormalization", {"1", "6", "3"}, 0);
  E = errorText(None.import());
  EXPECT_NE(E.find("no 'num_groups'"), std::string::npos) << E;
  ModelBuilder Wrong(21);
  Wrong.input("x", {"1", "4", "3"});
  Wrong.input("s", {"2"});
  Wrong.input("b", {"2"});
  setInt(Wrong.node("GroupNormalization", {"x", "s", "b"}, {"y"}, "n"),
         "num_groups", 2);
  Wrong.output("y");
  E = errorText(Wrong.import());
  EXPECT_NE(E.find("scale and bias must have shape [C]"), std::string::npos)
      << E;
  ModelBuilder Ints(6);
  Ints.input("x", {"1", "2", "2"}, onnx::TensorProto::INT32);
  Ints.input("s", {"2"});
  Ints.input("b", {"2"});
  Ints.node("InstanceNormalization", {"x", "s", "b"}, {"y"}, "n");
  Ints.output("y");
  E = errorText(Ints.import());
  EXPECT_NE(E.find("expects a float input"), std::string::npos) << E;
}

} // namespace
