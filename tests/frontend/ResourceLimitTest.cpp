//===- ResourceLimitTest.cpp - Hostile models cannot make solder allocate -===//
//
// Tiny models that ask for huge tensors (ConstantOfShape, Expand, Tile and
// Range to 2^40 elements, a Resize with a huge scale, initializers whose
// dims promise more data than they hold, a huge declared input) must be
// refused with the node named, or left unfolded, without allocating what
// they ask for: under ASan an attempt to allocate terabytes fails the test.
//
//===----------------------------------------------------------------------===//
#include "ModelBuilder.h"
#include "passes/Pipeline.h"
#include "gtest/gtest.h"
#include <limits>

using namespace solder;
using namespace solder::testing;

namespace {

#define EXPECT_CONTAINS(Text, Sub)                                             \
  EXPECT_NE((Text).find(Sub), std::string::npos) << (Text)

constexpr int64_t Big = int64_t(1) << 20; // two of these: 2^40 elements

/// Imports B and runs the pipeline; "" on success, else the error text.
std::string compileError(ModelBuilder &B, const PipelineOptions &PO = {}) {
  auto G = B.import();
  if (!G)
    return "import: " + llvm::toString(G.takeError());
  if (llvm::Error E = runPipeline(**G, PO))
    return "pipeline: " + llvm::toString(std::move(E));
  return "";
}

/// A model with input x[1] and, after Build adds its initializers and the
/// node under test producing "t", y = t + x (so the result is used).
template <typename FnT> ModelBuilder usedByAdd(FnT Build) {
  ModelBuilder B(17);
  B.input("x", {"1"});
  Build(B);
  B.node("Add", {"t", "x"}, {"y"}, "add");
  B.output("y");
  return B;
}

ModelBuilder constantOfShape(std::vector<int64_t> Shape) {
  return usedByAdd([&](ModelBuilder &B) {
    B.initInt64s("shape", Shape);
    B.node("ConstantOfShape", {"shape"}, {"t"}, "cos");
  });
}

TEST(ResourceLimits, ConstantOfShapeTo2To40IsRefused) {
  ModelBuilder B = constantOfShape({Big, Big});
  std::string E = compileError(B);
  EXPECT_CONTAINS(E, "'cos'");
}

TEST(ResourceLimits, LargeConstantOfShapeIsNotFolded) {
  // 1 GiB of zeros: within the tensor limit, above the folding limit.
  ModelBuilder B = constantOfShape({1 << 14, 1 << 14});
  ASSERT_IMPORTS(G, B);
  ASSERT_FALSE(bool(runPipeline(G, {})));
  EXPECT_NE(firstNode(G, OpKind::ConstantOfShape), nullptr)
      << "a 1 GiB ConstantOfShape was folded";
}

TEST(ResourceLimits, MaxTensorBytesNamesTheNode) {
  ModelBuilder B = constantOfShape({1 << 14, 1 << 14});
  PipelineOptions PO;
  PO.MaxTensorBytes = 256 << 20;
  std::string E = compileError(B, PO);
  EXPECT_CONTAINS(E, "ConstantOfShape node 'cos'");
  EXPECT_CONTAINS(E, "--max-tensor-bytes");
  EXPECT_CONTAINS(E, "1073741824 bytes");
}

TEST(ResourceLimits, MaxConstantBytesLeavesNodesUnfolded) {
  ModelBuilder B = constantOfShape({4, 4}); // 64 bytes
  {
    ASSERT_IMPORTS(G, B);
    ASSERT_FALSE(bool(runPipeline(G, {})));
    EXPECT_EQ(firstNode(G, OpKind::ConstantOfShape), nullptr);
  }
  PipelineOptions PO;
  PO.MaxFoldedConstantBytes = 32;
  ASSERT_IMPORTS(G, B);
  ASSERT_FALSE(bool(runPipeline(G, PO)));
  EXPECT_NE(firstNode(G, OpKind::ConstantOfShape), nullptr);
}

TEST(ResourceLimits, ExpandTo2To40IsRefused) {
  ModelBuilder B = usedByAdd([](ModelBuilder &B) {
    B.initFloats("one", {1.0f}, {1});
    B.initInt64s("shape", {Big, Big});
    B.node("Expand", {"one", "shape"}, {"t"}, "expand");
  });
  EXPECT_CONTAINS(compileError(B), "'expand'");
}

TEST(ResourceLimits, TileTo2To40IsRefused) {
  ModelBuilder B = usedByAdd([](ModelBuilder &B) {
    B.initFloats("v", {1, 2, 3, 4}, {2, 2});
    B.initInt64s("repeats", {Big / 2, Big / 2});
    B.node("Tile", {"v", "repeats"}, {"t"}, "tile");
  });
  EXPECT_CONTAINS(compileError(B), "'tile'");
}

TEST(ResourceLimits, RangeTo2To40IsRefused) {
  ModelBuilder B = usedByAdd([](ModelBuilder &B) {
    B.initializer("start", Tensor::scalar(DType::F32, 0));
    B.initializer("limit", Tensor::scalar(DType::F32, double(Big * Big)));
    B.initializer("delta", Tensor::scalar(DType::F32, 1));
    B.node("Range", {"start", "limit", "delta"}, {"t"}, "range");
  });
  EXPECT_CONTAINS(compileError(B), "'range'");
}

/// x[1,1,2,2] resized by {1, 1, Scale, Scale}.
static ModelBuilder resizeBy(float Scale) {
  ModelBuilder B(17);
  B.input("x", {"1", "1", "2", "2"});
  B.initFloats("scales", {1, 1, Scale, Scale}, {4});
  B.node("Resize", {"x", "", "scales"}, {"y"}, "resize");
  B.output("y");
  return B;
}

TEST(ResourceLimits, ResizeWithAHugeScaleIsRefused) {
  // Shape inference bounds floor(dim * scale) before converting it, and
  // the result is held to the tensor limit, naming the node.
  struct Case {
    float Scale;
    const char *Says;
  } Cases[] = {{1e9f, "would have more than"},
               {1e30f, "is too large"},
               {std::numeric_limits<float>::infinity(), "must be positive"}};
  for (const Case &C : Cases) {
    ModelBuilder B = resizeBy(C.Scale);
    std::string E = compileError(B);
    EXPECT_CONTAINS(E, "Resize node 'resize'");
    EXPECT_CONTAINS(E, C.Says);
  }
}

TEST(ResourceLimits, ResizeWithAModestScaleCompiles) {
  ModelBuilder B = resizeBy(3);
  EXPECT_EQ(compileError(B), "");
}

TEST(ResourceLimits, PadTo2To40IsRefused) {
  ModelBuilder B(17);
  B.input("x", {"2", "2"});
  B.initInt64s("pads", {0, 0, Big, Big});
  B.node("Pad", {"x", "pads"}, {"y"}, "pad");
  B.output("y");
  EXPECT_CONTAINS(compileError(B), "'pad'");
}

TEST(ResourceLimits, InitializerClaimingMoreThanItHolds) {
  ModelBuilder B = usedByAdd([](ModelBuilder &B) {
    onnx::TensorProto &W = B.initFloats("t", {1.0f}, {1});
    W.set_dims(0, int64_t(1) << 30);
  });
  std::string E = compileError(B);
  EXPECT_CONTAINS(E, "'t'");
  EXPECT_CONTAINS(E, "4294967296"); // the bytes its dims need
}

TEST(ResourceLimits, TypedInitializerClaimingMoreThanItHolds) {
  ModelBuilder B = usedByAdd([](ModelBuilder &B) {
    onnx::TensorProto *W = B.G->add_initializer();
    W->set_name("t");
    W->set_data_type(onnx::TensorProto::FLOAT);
    W->add_dims(Big);
    W->add_dims(Big / 64);
    W->add_float_data(1.0f);
  });
  EXPECT_CONTAINS(compileError(B), "'t'");
}

TEST(ResourceLimits, HugeDeclaredInputIsRefused) {
  ModelBuilder B(17);
  B.input("x", {"131072", "131072"}); // 64 GiB of f32
  B.node("Relu", {"x"}, {"y"}, "relu");
  B.output("y");
  std::string E = compileError(B);
  EXPECT_CONTAINS(E, "input 'x'");
  EXPECT_CONTAINS(E, "--max-tensor-bytes");
}

} // namespace
