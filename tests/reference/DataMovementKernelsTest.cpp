//===- DataMovementKernelsTest.cpp - Data-movement and shape kernels ------===//
//
// Hand-checked cases of the view ops (and that they share storage),
// Transpose, Concat, Split, Slice, Gather(Elements), Expand, Tile, Pad in
// every mode, Shape, ConstantOfShape and Range, over several dtypes.
//
//===----------------------------------------------------------------------===//
#include "NodeRunner.h"
#include "ir/OpKind.h"

using namespace solder;
using namespace solder::testing;

namespace {

Tensor iota(DType T, llvm::ArrayRef<int64_t> Dims) {
  Tensor X(T, Dims);
  for (int64_t I = 0; I < X.numElements(); ++I)
    X.setDouble(I, double(I));
  return X;
}

Tensor ints(llvm::ArrayRef<int64_t> V) { return Tensor::fromInt64s(V); }

using IV = std::vector<int64_t>;

TEST(DataMovementKernelsTest, ViewsShareStorage) {
  Tensor X = iota(DType::F32, {2, 3, 4});
  Tensor Shape = ints({4, 0, -1});
  Tensor R = NodeRunner(OpKind::Reshape).runOk({&X, &Shape});
  EXPECT_EQ(dimsOf(R), (IV{4, 3, 2}));
  EXPECT_EQ(R.rawData(), X.rawData());
  Tensor Zero = ints({0, 24});
  NodeRunner AZ(OpKind::Reshape);
  AZ.attr("allowzero", int64_t(1));
  AZ.expectError({&X, &Zero}, "elements");
  Tensor Empty = iota(DType::F32, {0, 3});
  Tensor ZS = ints({3, 0});
  EXPECT_EQ(dimsOf(AZ.runOk({&Empty, &ZS})), (IV{3, 0}));
  Tensor Two = ints({-1, -1});
  NodeRunner(OpKind::Reshape).expectError({&X, &Two}, "more than one -1");

  Tensor F = NodeRunner(OpKind::Flatten).attr("axis", int64_t(-1)).runOk({&X});
  EXPECT_EQ(dimsOf(F), (IV{6, 4}));
  EXPECT_EQ(
      dimsOf(NodeRunner(OpKind::Flatten).attr("axis", int64_t(0)).runOk({&X})),
      (IV{1, 24}));
  EXPECT_EQ(F.rawData(), X.rawData());

  Tensor Y = iota(DType::I64, {1, 3, 1});
  EXPECT_EQ(dimsOf(NodeRunner(OpKind::Squeeze).runOk({&Y, nullptr})), (IV{3}));
  Tensor Ax = ints({-1});
  EXPECT_EQ(dimsOf(NodeRunner(OpKind::Squeeze).runOk({&Y, &Ax})), (IV{1, 3}));
  Tensor Bad = ints({1});
  NodeRunner(OpKind::Squeeze).expectError({&Y, &Bad}, "cannot squeeze");
  Tensor UA = ints({3, 0, -1});
  Tensor U = NodeRunner(OpKind::Unsqueeze).runOk({&Y, &UA});
  EXPECT_EQ(dimsOf(U), (IV{1, 1, 3, 1, 1, 1}));
  EXPECT_EQ(U.rawData(), Y.rawData());
  Tensor I = NodeRunner(OpKind::Identity).runOk({&Y});
  EXPECT_EQ(I.rawData(), Y.rawData());
}

TEST(DataMovementKernelsTest, Transpose) {
  Tensor X = iota(DType::F32, {2, 3});
  Tensor T = NodeRunner(OpKind::Transpose).runOk({&X});
  EXPECT_EQ(dimsOf(T), (IV{3, 2}));
  EXPECT_EQ(toFloats(T), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  Tensor X3 = iota(DType::U16, {2, 3, 4});
  Tensor T3 =
      NodeRunner(OpKind::Transpose).attr("perm", IV{1, 2, 0}).runOk({&X3});
  EXPECT_EQ(dimsOf(T3), (IV{3, 4, 2}));
  ASSERT_EQ(T3.dtype(), DType::U16);
  // T3[c, d, a] = X3[a, c, d] = 12a + 4c + d.
  for (int64_t C = 0; C < 3; ++C)
    for (int64_t D = 0; D < 4; ++D)
      for (int64_t A = 0; A < 2; ++A)
        EXPECT_EQ(T3.getInt64((C * 4 + D) * 2 + A), 12 * A + 4 * C + D);
  NodeRunner(OpKind::Transpose)
      .attr("perm", IV{0, 0, 1})
      .expectError({&X3}, "permutation");
}

TEST(DataMovementKernelsTest, ConcatAndSplit) {
  Tensor A = iota(DType::I32, {2, 2}), B = iota(DType::I32, {2, 1});
  Tensor C =
      NodeRunner(OpKind::Concat).attr("axis", int64_t(-1)).runOk({&A, &B});
  EXPECT_EQ(dimsOf(C), (IV{2, 3}));
  EXPECT_EQ(toInts(C), (IV{0, 1, 0, 2, 3, 1}));
  Tensor E = iota(DType::I32, {2, 0});
  EXPECT_EQ(toInts(NodeRunner(OpKind::Concat)
                       .attr("axis", int64_t(1))
                       .runOk({&E, &A, &E})),
            toInts(A));

  Tensor X = iota(DType::F64, {2, 5});
  Tensor Sizes = ints({1, 4});
  auto S =
      NodeRunner(OpKind::Split, 2).attr("axis", int64_t(1)).run({&X, &Sizes});
  ASSERT_TRUE(bool(S)) << llvm::toString(S.takeError());
  EXPECT_EQ(toInts((*S)[0]), (IV{0, 5}));
  EXPECT_EQ(toInts((*S)[1]), (IV{1, 2, 3, 4, 6, 7, 8, 9}));
  // num_outputs: ceil(5/3) = 2 -> 2, 2, 1.
  auto N = NodeRunner(OpKind::Split, 3)
               .attr("axis", int64_t(1))
               .attr("num_outputs", int64_t(3))
               .run({&X, nullptr});
  ASSERT_TRUE(bool(N)) << llvm::toString(N.takeError());
  EXPECT_EQ(dimsOf((*N)[2]), (IV{2, 1}));
  EXPECT_EQ(toInts((*N)[1]), (IV{2, 3, 7, 8}));
  auto Eq = NodeRunner(OpKind::Split, 2).run({&X, nullptr});
  ASSERT_TRUE(bool(Eq)) << llvm::toString(Eq.takeError());
  EXPECT_EQ(toInts((*Eq)[1]), (IV{5, 6, 7, 8, 9}));
  NodeRunner(OpKind::Split, 3).expectError({&X, nullptr}, "equal parts");
}

TEST(DataMovementKernelsTest, Slice) {
  Tensor X = iota(DType::F32, {3, 4});
  Tensor St = ints({1, 0}), En = ints({1000, -1}), Ax = ints({0, 1});
  Tensor Y = NodeRunner(OpKind::Slice).runOk({&X, &St, &En, &Ax, nullptr});
  EXPECT_EQ(dimsOf(Y), (IV{2, 3}));
  EXPECT_EQ(toFloats(Y), (std::vector<float>{4, 5, 6, 8, 9, 10}));
  // Negative step over axis 1 only, from the end to the start.
  Tensor S2 = ints({-1}), E2 = ints({INT64_MIN}), A2 = ints({-1}),
         P2 = ints({-2});
  Tensor Z = NodeRunner(OpKind::Slice).runOk({&X, &S2, &E2, &A2, &P2});
  EXPECT_EQ(dimsOf(Z), (IV{3, 2}));
  EXPECT_EQ(toFloats(Z), (std::vector<float>{3, 1, 7, 5, 11, 9}));
  Tensor S3 = ints({10}), E3 = ints({12});
  EXPECT_EQ(dimsOf(NodeRunner(OpKind::Slice).runOk({&X, &S3, &E3})),
            (IV{0, 4}));
  Tensor Zero = ints({0});
  NodeRunner(OpKind::Slice)
      .expectError({&X, &St, &En, &Ax, &Zero}, "differ in length");
}

TEST(DataMovementKernelsTest, GatherAndGatherElements) {
  Tensor X = iota(DType::F32, {3, 2});
  Tensor Idx = ints({2, -3, 1, 1}).reshaped({2, 2});
  Tensor G = NodeRunner(OpKind::Gather).runOk({&X, &Idx});
  EXPECT_EQ(dimsOf(G), (IV{2, 2, 2}));
  EXPECT_EQ(toFloats(G), (std::vector<float>{4, 5, 0, 1, 2, 3, 2, 3}));
  Tensor I1(DType::I32, {});
  I1.setDouble(0, -1);
  Tensor G1 =
      NodeRunner(OpKind::Gather).attr("axis", int64_t(1)).runOk({&X, &I1});
  EXPECT_EQ(dimsOf(G1), (IV{3}));
  EXPECT_EQ(toFloats(G1), (std::vector<float>{1, 3, 5}));
  Tensor Out = ints({3});
  NodeRunner(OpKind::Gather).expectError({&X, &Out}, "out of range");

  Tensor EI = ints({1, 0, 0, -1}).reshaped({2, 2});
  Tensor GE = NodeRunner(OpKind::GatherElements)
                  .attr("axis", int64_t(1))
                  .runOk({&X, &EI});
  EXPECT_EQ(toFloats(GE), (std::vector<float>{1, 0, 2, 3}));
  Tensor EI0 = ints({2, 0}).reshaped({1, 2});
  EXPECT_EQ(toFloats(NodeRunner(OpKind::GatherElements).runOk({&X, &EI0})),
            (std::vector<float>{4, 1}));
}

TEST(DataMovementKernelsTest, ExpandAndTile) {
  Tensor X = iota(DType::I8, {3, 1});
  Tensor Shape = ints({2, 1, 2});
  Tensor E = NodeRunner(OpKind::Expand).runOk({&X, &Shape});
  EXPECT_EQ(dimsOf(E), (IV{2, 3, 2}));
  EXPECT_EQ(toInts(E), (IV{0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2}));
  Tensor Bad = ints({2, 2});
  NodeRunner(OpKind::Expand).expectError({&X, &Bad}, "does not broadcast");
  Tensor B(DType::Bool, {2});
  B.setDouble(0, 1);
  Tensor Rep = ints({3});
  EXPECT_EQ(toInts(NodeRunner(OpKind::Tile).runOk({&B, &Rep})),
            (IV{1, 0, 1, 0, 1, 0}));
  Tensor Y = iota(DType::F32, {2, 2});
  Tensor R2 = ints({1, 2});
  EXPECT_EQ(toFloats(NodeRunner(OpKind::Tile).runOk({&Y, &R2})),
            (std::vector<float>{0, 1, 0, 1, 2, 3, 2, 3}));
}

TEST(DataMovementKernelsTest, PadModes) {
  Tensor X = floats({1, 3}, {1, 2, 3});
  Tensor Pads = ints({0, 2, 0, 3});
  auto run = [&](const char *Mode, const Tensor *CV = nullptr) {
    return toFloats(
        NodeRunner(OpKind::Pad).attr("mode", Mode).runOk({&X, &Pads, CV}));
  };
  Tensor CV = floats({}, {9});
  EXPECT_EQ(run("constant", &CV), (std::vector<float>{9, 9, 1, 2, 3, 9, 9, 9}));
  EXPECT_EQ(run("constant"), (std::vector<float>{0, 0, 1, 2, 3, 0, 0, 0}));
  EXPECT_EQ(run("edge"), (std::vector<float>{1, 1, 1, 2, 3, 3, 3, 3}));
  EXPECT_EQ(run("reflect"), (std::vector<float>{3, 2, 1, 2, 3, 2, 1, 2}));
  EXPECT_EQ(run("wrap"), (std::vector<float>{2, 3, 1, 2, 3, 1, 2, 3}));
  // Negative pads crop; axes select the padded dims.
  Tensor Crop = ints({-1, 1}), Axes = ints({-1});
  EXPECT_EQ(
      toFloats(NodeRunner(OpKind::Pad).runOk({&X, &Crop, nullptr, &Axes})),
      (std::vector<float>{2, 3, 0}));
  NodeRunner(OpKind::Pad)
      .attr("mode", "mirror")
      .expectError({&X, &Pads}, "unknown mode");
}

TEST(ShapeKernelsTest, ShapeConstantOfShapeRange) {
  Tensor X = iota(DType::F32, {2, 3, 4});
  EXPECT_EQ(toInts(NodeRunner(OpKind::Shape).runOk({&X})), (IV{2, 3, 4}));
  EXPECT_EQ(toInts(NodeRunner(OpKind::Shape)
                       .attr("start", int64_t(-2))
                       .attr("end", int64_t(100))
                       .runOk({&X})),
            (IV{3, 4}));
  EXPECT_EQ(NodeRunner(OpKind::Shape)
                .attr("start", int64_t(2))
                .attr("end", int64_t(1))
                .runOk({&X})
                .numElements(),
            0);

  Tensor S = ints({2, 2});
  Tensor Z = NodeRunner(OpKind::ConstantOfShape).runOk({&S});
  EXPECT_EQ(Z.dtype(), DType::F32);
  EXPECT_EQ(toFloats(Z), (std::vector<float>{0, 0, 0, 0}));
  Tensor V = Tensor::scalar(DType::I32, 7).reshaped({1});
  Tensor C = NodeRunner(OpKind::ConstantOfShape).attr("value", V).runOk({&S});
  EXPECT_EQ(C.dtype(), DType::I32);
  EXPECT_EQ(toInts(C), (IV{7, 7, 7, 7}));

  Tensor A = Tensor::scalar(DType::I32, 10), L = Tensor::scalar(DType::I32, 3),
         D = Tensor::scalar(DType::I32, -3);
  Tensor R = NodeRunner(OpKind::Range).runOk({&A, &L, &D});
  EXPECT_EQ(R.dtype(), DType::I32);
  EXPECT_EQ(toInts(R), (IV{10, 7, 4}));
  Tensor FA = Tensor::scalar(DType::F32, 1), FL = Tensor::scalar(DType::F32, 2),
         FD = Tensor::scalar(DType::F32, 0.25);
  EXPECT_EQ(toFloats(NodeRunner(OpKind::Range).runOk({&FA, &FL, &FD})),
            (std::vector<float>{1, 1.25f, 1.5f, 1.75f}));
  Tensor Zero = Tensor::scalar(DType::F32, 0);
  NodeRunner(OpKind::Range).expectError({&FA, &FL, &Zero}, "delta is 0");
}

} // namespace
