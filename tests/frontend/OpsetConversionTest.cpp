//===- OpsetConversionTest.cpp - Old op versions become canonical IR ------===//
//
// One small model per version difference: attributes that later opsets made
// inputs must arrive as constant operands with the right values, legacy-only
// attributes must be dropped, and legacy semantics solder does not support
// must be refused with a clear error.
//
//===----------------------------------------------------------------------===//
#include "frontend/OpsetConversion.h"
#include "ModelBuilder.h"
#include "ir/OpRegistry.h"
#include "gtest/gtest.h"

using namespace solder;
using namespace solder::testing;

namespace {

TEST(OpsetConversion, Clip6AttributesBecomeOperands) {
  ModelBuilder B(6);
  B.input("x", {"2", "3"});
  auto &N = B.node("Clip", {"x"}, {"y"}, "clip");
  setFloat(N, "min", 0.0f);
  setFloat(N, "max", 6.0f);
  B.output("y");
  ASSERT_IMPORTS(G, B);
  Node *C = firstNode(G, OpKind::Clip);
  ASSERT_TRUE(C);
  ASSERT_EQ(C->numOperands(), 3u);
  EXPECT_EQ(constValues(C->operand(1)), std::vector<double>{0.0});
  EXPECT_EQ(constValues(C->operand(2)), std::vector<double>{6.0});
  EXPECT_EQ(C->operand(1)->dtype(), DType::F32);
  EXPECT_EQ(C->operand(1)->type().rank(), 0u);
  EXPECT_TRUE(C->attrs().empty());
}

TEST(OpsetConversion, Clip6OnlyMaxLeavesMinAbsent) {
  ModelBuilder B(6);
  B.input("x", {"4"}, onnx::TensorProto::DOUBLE);
  setFloat(B.node("Clip", {"x"}, {"y"}), "max", 1.5f);
  B.output("y");
  ASSERT_IMPORTS(G, B);
  Node *C = firstNode(G, OpKind::Clip);
  ASSERT_TRUE(C);
  EXPECT_EQ(C->operand(1), nullptr);
  EXPECT_EQ(constValues(C->operand(2)), std::vector<double>{1.5});
  EXPECT_EQ(C->operand(2)->dtype(), DType::F64);
}

TEST(OpsetConversion, Clip11AbsentOptionalOperandIsNull) {
  ModelBuilder B(13);
  B.input("x", {"4"});
  B.initFloats("hi", {2.0f}, {});
  B.node("Clip", {"x", "", "hi"}, {"y"});
  B.output("y");
  ASSERT_IMPORTS(G, B);
  Node *C = firstNode(G, OpKind::Clip);
  ASSERT_EQ(C->numOperands(), 3u);
  EXPECT_EQ(C->operand(1), nullptr);
  EXPECT_EQ(C->operand(2), G.lookup("hi"));
}

TEST(OpsetConversion, SqueezeUnsqueezeAxesAttribute) {
  ModelBuilder B(11);
  B.input("x", {"1", "3", "1"});
  setInts(B.node("Squeeze", {"x"}, {"s"}), "axes", {0, 2});
  setInts(B.node("Unsqueeze", {"s"}, {"u"}), "axes", {1});
  B.node("Squeeze", {"u"}, {"all"});
  B.output("all");
  ASSERT_IMPORTS(G, B);
  Node *S = firstNode(G, OpKind::Squeeze);
  EXPECT_EQ(constValues(S->operand(1)), (std::vector<double>{0, 2}));
  EXPECT_EQ(S->operand(1)->dtype(), DType::I64);
  Node *U = firstNode(G, OpKind::Unsqueeze);
  EXPECT_EQ(constValues(U->operand(1)), std::vector<double>{1});
  EXPECT_EQ(typeToString(U->result()->type()), "f32[3,1]");
  // Squeeze without axes keeps one operand.
  Node *Last = G.nodes().back().get();
  EXPECT_EQ(Last->kind(), OpKind::Squeeze);
  EXPECT_EQ(Last->numOperands(), 1u);
  EXPECT_EQ(typeToString(G.outputs()[0]->type()), "f32[3]");
}

TEST(OpsetConversion, Squeeze13UsesOperand) {
  ModelBuilder B(13);
  B.input("x", {"1", "3"});
  B.initInt64s("ax", {0});
  B.node("Squeeze", {"x", "ax"}, {"y"});
  B.output("y");
  ASSERT_IMPORTS(G, B);
  EXPECT_EQ(firstNode(G, OpKind::Squeeze)->operand(1), G.lookup("ax"));
}

TEST(OpsetConversion, ReduceAxesAttributeByVersion) {
  // ReduceSum moved axes to an input at 13, ReduceMean/ReduceMax at 18.
  ModelBuilder B(17);
  B.input("x", {"2", "3", "4"});
  auto &M = B.node("ReduceMean", {"x"}, {"m"});
  setInts(M, "axes", {-1});
  setInt(M, "keepdims", 0);
  B.initInt64s("ax", {1});
  B.node("ReduceSum", {"m", "ax"}, {"s"});
  B.output("s");
  ASSERT_IMPORTS(G, B);
  Node *RM = firstNode(G, OpKind::ReduceMean);
  EXPECT_EQ(constValues(RM->operand(1)), std::vector<double>{-1});
  EXPECT_EQ(RM->attrs().getInt("keepdims", 1), 0);
  EXPECT_EQ(typeToString(RM->result()->type()), "f32[2,3]");
  EXPECT_EQ(firstNode(G, OpKind::ReduceSum)->operand(1), G.lookup("ax"));
}

TEST(OpsetConversion, ReduceSum11AxesAttribute) {
  ModelBuilder B(11);
  B.input("x", {"2", "3"});
  setInts(B.node("ReduceSum", {"x"}, {"s"}), "axes", {0});
  B.node("ReduceMax", {"s"}, {"m"}); // no axes: all dims
  B.output("m");
  ASSERT_IMPORTS(G, B);
  EXPECT_EQ(constValues(firstNode(G, OpKind::ReduceSum)->operand(1)),
            std::vector<double>{0});
  EXPECT_EQ(firstNode(G, OpKind::ReduceMax)->numOperands(), 1u);
  EXPECT_EQ(typeToString(G.outputs()[0]->type()), "f32[1,1]");
}

TEST(OpsetConversion, Split11SizesAttribute) {
  ModelBuilder B(11);
  B.input("x", {"6", "2"});
  auto &S = B.node("Split", {"x"}, {"a", "b"});
  setInts(S, "split", {2, 4});
  setInt(S, "axis", 0);
  B.output("a");
  B.output("b");
  ASSERT_IMPORTS(G, B);
  Node *N = firstNode(G, OpKind::Split);
  EXPECT_EQ(constValues(N->operand(1)), (std::vector<double>{2, 4}));
  EXPECT_EQ(N->attrs().getInt("axis", 99), 0);
  EXPECT_EQ(typeToString(G.lookup("b")->type()), "f32[4,2]");
}

TEST(OpsetConversion, Split13EqualPartsGetNumOutputs) {
  ModelBuilder B(13);
  B.input("x", {"2", "6"});
  setInt(B.node("Split", {"x"}, {"a", "b", "c"}), "axis", 1);
  B.output("c");
  ASSERT_IMPORTS(G, B);
  Node *N = firstNode(G, OpKind::Split);
  EXPECT_EQ(N->numOperands(), 1u);
  EXPECT_EQ(N->attrs().getInt("num_outputs", 0), 3);
  EXPECT_EQ(typeToString(G.lookup("c")->type()), "f32[2,2]");
}

TEST(OpsetConversion, Split18NumOutputsCopied) {
  ModelBuilder B(18);
  B.input("x", {"4"});
  setInt(B.node("Split", {"x"}, {"a", "b"}), "num_outputs", 2);
  B.output("a");
  ASSERT_IMPORTS(G, B);
  EXPECT_EQ(firstNode(G, OpKind::Split)->attrs().getInt("num_outputs", 0), 2);
}

TEST(OpsetConversion, Pad2AttributesBecomeOperands) {
  ModelBuilder B(2);
  B.input("x", {"2", "2"});
  auto &P = B.node("Pad", {"x"}, {"y"});
  setInts(P, "pads", {0, 1, 0, 1});
  setFloat(P, "value", 3.5f);
  setString(P, "mode", "constant");
  B.output("y");
  ASSERT_IMPORTS(G, B);
  Node *N = firstNode(G, OpKind::Pad);
  ASSERT_EQ(N->numOperands(), 3u);
  EXPECT_EQ(constValues(N->operand(1)), (std::vector<double>{0, 1, 0, 1}));
  EXPECT_EQ(constValues(N->operand(2)), std::vector<double>{3.5});
  EXPECT_EQ(N->attrs().getString("mode", ""), "constant");
  EXPECT_EQ(typeToString(N->result()->type()), "f32[2,4]");
}

TEST(OpsetConversion, Pad1UsesPaddings) {
  ModelBuilder B(1);
  B.input("x", {"3"});
  auto &P = B.node("Pad", {"x"}, {"y"});
  setInts(P, "paddings", {2, 1});
  setString(P, "mode", "edge");
  B.output("y");
  ASSERT_IMPORTS(G, B);
  Node *N = firstNode(G, OpKind::Pad);
  EXPECT_EQ(constValues(N->operand(1)), (std::vector<double>{2, 1}));
  EXPECT_EQ(N->operand(2), nullptr);
  EXPECT_EQ(typeToString(N->result()->type()), "f32[6]");
}

TEST(OpsetConversion, Slice1AttributesBecomeOperands) {
  ModelBuilder B(9);
  B.input("x", {"5", "6"});
  auto &S = B.node("Slice", {"x"}, {"y"});
  setInts(S, "starts", {1});
  setInts(S, "ends", {4});
  setInts(S, "axes", {1});
  B.output("y");
  ASSERT_IMPORTS(G, B);
  Node *N = firstNode(G, OpKind::Slice);
  ASSERT_EQ(N->numOperands(), 4u);
  EXPECT_EQ(constValues(N->operand(1)), std::vector<double>{1});
  EXPECT_EQ(constValues(N->operand(2)), std::vector<double>{4});
  EXPECT_EQ(constValues(N->operand(3)), std::vector<double>{1});
  EXPECT_EQ(typeToString(N->result()->type()), "f32[5,3]");
}

TEST(OpsetConversion, Reshape1ShapeAttribute) {
  ModelBuilder B(1);
  B.input("x", {"2", "6"});
  auto &R = B.node("Reshape", {"x"}, {"y"});
  setInts(R, "shape", {3, -1});
  setInts(R, "consumed_inputs", {0});
  B.output("y");
  ASSERT_IMPORTS(G, B);
  Node *N = firstNode(G, OpKind::Reshape);
  EXPECT_EQ(constValues(N->operand(1)), (std::vector<double>{3, -1}));
  EXPECT_EQ(typeToString(N->result()->type()), "f32[3,4]");
}

static void addBatchNormParams(ModelBuilder &B) {
  for (const char *P : {"scale", "bias", "mean", "var"})
    B.initFloats(P, {1, 2}, {2});
}

TEST(OpsetConversion, BatchNorm6SpatialAndIsTestAccepted) {
  ModelBuilder B(6);
  B.input("x", {"1", "2", "3", "3"});
  addBatchNormParams(B);
  auto &N = B.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"},
                   {"y"}, "bn");
  setInt(N, "spatial", 1);
  setInt(N, "is_test", 1);
  setFloat(N, "epsilon", 1e-3f);
  setFloat(N, "momentum", 0.9f);
  B.output("y");
  ASSERT_IMPORTS(G, B);
  Node *BN = firstNode(G, OpKind::BatchNormalization);
  EXPECT_EQ(BN->numResults(), 1u);
  EXPECT_FLOAT_EQ(BN->attrs().getFloat("epsilon", 0), 1e-3f);
  EXPECT_FALSE(BN->attrs().has("spatial"));
  EXPECT_FALSE(BN->attrs().has("is_test"));
}

TEST(OpsetConversion, BatchNorm7SpatialZeroRefused) {
  ModelBuilder B(7);
  B.input("x", {"1", "2", "3", "3"});
  addBatchNormParams(B);
  auto &N = B.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"},
                   {"y"}, "bn");
  setInt(N, "spatial", 0);
  B.output("y");
  std::string E = errorText(B.import());
  EXPECT_NE(E.find("BatchNormalization node 'bn'"), std::string::npos) << E;
  EXPECT_NE(E.find("spatial=0"), std::string::npos) << E;
}

TEST(OpsetConversion, BatchNorm15TrainingModeRefused) {
  ModelBuilder B(15);
  B.input("x", {"1", "2", "3", "3"});
  addBatchNormParams(B);
  auto &N = B.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"},
                   {"y"}, "bn");
  setInt(N, "training_mode", 1);
  B.output("y");
  std::string E = errorText(B.import());
  EXPECT_NE(E.find("training"), std::string::npos) << E;
}

TEST(OpsetConversion, BatchNorm9UsedStatisticsOutputRefused) {
  ModelBuilder B(9);
  B.input("x", {"1", "2", "3", "3"});
  addBatchNormParams(B);
  B.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"},
         {"y", "run_mean", "run_var"}, "bn");
  B.output("y");
  // Listed but unused statistics outputs are dropped.
  ASSERT_IMPORTS(G, B);
  EXPECT_EQ(firstNode(G, OpKind::BatchNormalization)->numResults(), 1u);
  B.output("run_mean");
  std::string E = errorText(B.import());
  EXPECT_NE(E.find("'run_mean'"), std::string::npos) << E;
  EXPECT_NE(E.find("training"), std::string::npos) << E;
}

TEST(OpsetConversion, Softmax11NonLastAxisIsFlattenedAndReshaped) {
  ModelBuilder B(11);
  B.input("x", {"N", "3", "4", "5"});
  setInt(B.node("Softmax", {"x"}, {"y"}, "sm"), "axis", 1);
  B.output("y");
  ASSERT_IMPORTS(G, B);
  EXPECT_EQ(opSequence(G), "Flatten Softmax Shape Reshape");
  Node *F = firstNode(G, OpKind::Flatten);
  EXPECT_EQ(F->attrs().getInt("axis", 0), 1);
  EXPECT_EQ(typeToString(F->result()->type()), "f32[N,60]");
  Node *S = firstNode(G, OpKind::Softmax);
  EXPECT_EQ(S->attrs().getInt("axis", 0), -1);
  Value *Y = G.outputs()[0];
  EXPECT_EQ(Y->name(), "y");
  EXPECT_EQ(Y->producer()->kind(), OpKind::Reshape);
  EXPECT_EQ(Y->type().rank(), 4u);
  EXPECT_EQ(Y->dtype(), DType::F32);
}

TEST(OpsetConversion, Softmax11DefaultAxisOnMatrixIsOneSoftmax) {
  ModelBuilder B(11);
  B.input("x", {"2", "7"});
  B.node("LogSoftmax", {"x"}, {"y"}); // default axis 1 == last
  B.output("y");
  ASSERT_IMPORTS(G, B);
  EXPECT_EQ(opSequence(G), "LogSoftmax");
  EXPECT_EQ(firstNode(G, OpKind::LogSoftmax)->attrs().getInt("axis", 0), -1);
}

TEST(OpsetConversion, Softmax13KeepsAxis) {
  ModelBuilder B(13);
  B.input("x", {"2", "3", "4"});
  setInt(B.node("Softmax", {"x"}, {"y"}), "axis", 1);
  B.output("y");
  ASSERT_IMPORTS(G, B);
  EXPECT_EQ(opSequence(G), "Softmax");
  EXPECT_EQ(firstNode(G, OpKind::Softmax)->attrs().getInt("axis", 0), 1);
}

TEST(OpsetConversion, Gemm6BroadcastAttributeDropped) {
  ModelBuilder B(6);
  B.input("a", {"2", "3"});
  B.initFloats("b", {1, 2, 3, 4, 5, 6}, {3, 2});
  B.initFloats("c", {1, 2}, {2});
  auto &N = B.node("Gemm", {"a", "b", "c"}, {"y"});
  setInt(N, "broadcast", 1);
  setFloat(N, "alpha", 2.0f);
  B.output("y");
  ASSERT_IMPORTS(G, B);
  Node *Gm = firstNode(G, OpKind::Gemm);
  EXPECT_FALSE(Gm->attrs().has("broadcast"));
  EXPECT_FLOAT_EQ(Gm->attrs().getFloat("alpha", 0), 2.0f);
  EXPECT_EQ(typeToString(Gm->result()->type()), "f32[2,2]");
}

TEST(OpsetConversion, Add6TrailingBroadcastAccepted) {
  ModelBuilder B(6);
  B.input("a", {"2", "3", "4", "5"});
  B.input("b", {"5"});
  setInt(B.node("Add", {"a", "b"}, {"y"}), "broadcast", 1);
  B.output("y");
  ASSERT_IMPORTS(G, B);
  EXPECT_EQ(opSequence(G), "Add");
  EXPECT_TRUE(firstNode(G, OpKind::Add)->attrs().empty());
}

TEST(OpsetConversion, Add6AxisBroadcastRefused) {
  ModelBuilder B(6);
  B.input("a", {"2", "3", "4", "5"});
  B.input("b", {"3"});
  auto &N = B.node("Mul", {"a", "b"}, {"y"}, "scale");
  setInt(N, "broadcast", 1);
  setInt(N, "axis", 1);
  B.output("y");
  std::string E = errorText(B.import());
  EXPECT_NE(E.find("Mul node 'scale'"), std::string::npos) << E;
  EXPECT_NE(E.find("legacy broadcasting"), std::string::npos) << E;
}

TEST(OpsetConversion, Dropout6AttributesDropped) {
  ModelBuilder B(6);
  B.input("x", {"4"});
  auto &N = B.node("Dropout", {"x"}, {"y"});
  setInt(N, "is_test", 1);
  setFloat(N, "ratio", 0.3f);
  B.output("y");
  ASSERT_IMPORTS(G, B);
  Node *D = firstNode(G, OpKind::Dropout);
  EXPECT_EQ(D->numOperands(), 1u);
  EXPECT_EQ(D->numResults(), 1u);
  EXPECT_TRUE(D->attrs().empty());
}

TEST(OpsetConversion, Dropout12TrainingModeRefused) {
  ModelBuilder B(12);
  B.input("x", {"4"});
  B.initFloats("ratio", {0.5f}, {});
  B.initializer("train", Tensor::scalar(DType::Bool, 1));
  B.node("Dropout", {"x", "ratio", "train"}, {"y"}, "drop");
  B.output("y");
  std::string E = errorText(B.import());
  EXPECT_NE(E.find("Dropout node 'drop'"), std::string::npos) << E;
  EXPECT_NE(E.find("training"), std::string::npos) << E;
}

TEST(OpsetConversion, Cast1StringTypeName) {
  ModelBuilder B(1);
  B.input("x", {"3"});
  setString(B.node("Cast", {"x"}, {"y"}), "to", "FLOAT16");
  B.output("y");
  ASSERT_IMPORTS(G, B);
  Node *C = firstNode(G, OpKind::Cast);
  EXPECT_EQ(C->attrs().getInt("to", 0), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(C->result()->dtype(), DType::F16);
}

TEST(OpsetConversion, CastToStringRefused) {
  ModelBuilder B(13);
  B.input("x", {"3"});
  setInt(B.node("Cast", {"x"}, {"y"}, "c"), "to", onnx::TensorProto::STRING);
  B.output("y");
  std::string E = errorText(B.import());
  EXPECT_NE(E.find("Cast node 'c'"), std::string::npos) << E;
  EXPECT_NE(E.find("STRING"), std::string::npos) << E;
}

TEST(OpsetConversion, Relu1ConsumedInputsIgnored) {
  ModelBuilder B(1);
  B.input("x", {"3"});
  setInts(B.node("Relu", {"x"}, {"y"}), "consumed_inputs", {0});
  B.output("y");
  ASSERT_IMPORTS(G, B);
  EXPECT_TRUE(firstNode(G, OpKind::Relu)->attrs().empty());
}

TEST(OpsetConversion, Concat1DefaultAxisIsOne) {
  ModelBuilder B(1);
  B.input("a", {"2", "3"});
  B.input("b", {"2", "4"});
  B.node("Concat", {"a", "b"}, {"y"});
  B.output("y");
  ASSERT_IMPORTS(G, B);
  EXPECT_EQ(firstNode(G, OpKind::Concat)->attrs().getInt("axis", 0), 1);
  EXPECT_EQ(typeToString(G.outputs()[0]->type()), "f32[2,7]");
}

TEST(OpsetConversion, Tile1Refused) {
  ModelBuilder B(1);
  B.input("x", {"3"});
  B.initInt64s("t", {2});
  B.initInt64s("ax", {0});
  B.node("Tile", {"x", "t", "ax"}, {"y"});
  B.output("y");
  std::string E = errorText(B.import());
  EXPECT_NE(E.find("Tile-1"), std::string::npos) << E;
}

TEST(OpsetConversion, ConstantNodeForms) {
  ModelBuilder B(13);
  B.input("x", {"2"});
  setTensor(B.node("Constant", {}, {"ct"}), "value",
            Tensor::fromFloats({1, 2}, {2}));
  setFloat(B.node("Constant", {}, {"cf"}), "value_float", 0.5f);
  setInts(B.node("Constant", {}, {"ci"}), "value_ints", {4, 5, 6});
  setInt(B.node("Constant", {}, {"c1"}), "value_int", (int64_t(1) << 60) + 1);
  B.node("Add", {"x", "ct"}, {"y"});
  B.node("Mul", {"y", "cf"}, {"z"});
  B.output("z");
  B.output("ci");
  B.output("c1");
  ASSERT_IMPORTS(G, B);
  EXPECT_EQ(opSequence(G), "Add Mul");
  EXPECT_EQ(constValues(G.lookup("ct")), (std::vector<double>{1, 2}));
  EXPECT_EQ(constValues(G.lookup("cf")), std::vector<double>{0.5});
  EXPECT_EQ(G.lookup("cf")->type().rank(), 0u);
  EXPECT_EQ(G.lookup("ci")->dtype(), DType::I64);
  EXPECT_EQ(constValues(G.lookup("ci")), (std::vector<double>{4, 5, 6}));
  EXPECT_EQ(G.lookup("c1")->constant()->getInt64(0), (int64_t(1) << 60) + 1);
}

TEST(OpsetConversion, SparseConstantRefused) {
  ModelBuilder B(13);
  auto &A = addAttr(B.node("Constant", {}, {"c"}, "sp"), "sparse_value");
  A.set_type(onnx::AttributeProto::SPARSE_TENSOR);
  B.output("c");
  std::string E = errorText(B.import());
  EXPECT_NE(E.find("Constant node 'sp'"), std::string::npos) << E;
  EXPECT_NE(E.find("sparse"), std::string::npos) << E;
}

TEST(OpsetConversion, ConstantOfShapeValueAttribute) {
  ModelBuilder B(9);
  B.initInt64s("shape", {2, 3});
  setTensor(B.node("ConstantOfShape", {"shape"}, {"y"}), "value",
            Tensor::fromInt64s({7}));
  B.output("y");
  ASSERT_IMPORTS(G, B);
  Node *N = firstNode(G, OpKind::ConstantOfShape);
  const Attribute *V = N->attrs().find("value");
  ASSERT_TRUE(V);
  EXPECT_EQ(V->getTensor().getInt64(0), 7);
  EXPECT_EQ(typeToString(N->result()->type()), "i64[2,3]");
}

TEST(OpsetConversion, Gelu20AndNotBefore) {
  ModelBuilder B(20);
  B.input("x", {"3"});
  setString(B.node("Gelu", {"x"}, {"y"}), "approximate", "tanh");
  B.output("y");
  ASSERT_IMPORTS(G, B);
  EXPECT_EQ(firstNode(G, OpKind::Gelu)->attrs().getString("approximate", ""),
            "tanh");

  ModelBuilder Old(17);
  Old.input("x", {"3"});
  Old.node("Gelu", {"x"}, {"y"}, "g");
  Old.output("y");
  std::string E = errorText(Old.import());
  EXPECT_NE(E.find("Gelu (not in opset 17)"), std::string::npos) << E;
  EXPECT_NE(E.find("g"), std::string::npos) << E;
}

TEST(OpsetConversion, LayerNorm17AbsentMiddleOutput) {
  ModelBuilder B(17);
  B.input("x", {"2", "8"});
  B.initFloats("s", std::vector<float>(8, 1.0f), {8});
  auto &N = B.node("LayerNormalization", {"x", "s"}, {"y", "", "inv"});
  setFloat(N, "epsilon", 1e-6f);
  B.output("y");
  B.output("inv");
  ASSERT_IMPORTS(G, B);
  Node *LN = firstNode(G, OpKind::LayerNormalization);
  EXPECT_EQ(LN->numResults(), 3u);
  EXPECT_EQ(LN->result(2)->name(), "inv");
  EXPECT_FLOAT_EQ(LN->attrs().getFloat("epsilon", 0), 1e-6f);
}

TEST(OpsetConversion, TrailingAbsentOutputsDropped) {
  ModelBuilder B(13);
  B.input("x", {"4"});
  B.node("Dropout", {"x"}, {"y", ""});
  B.output("y");
  ASSERT_IMPORTS(G, B);
  EXPECT_EQ(firstNode(G, OpKind::Dropout)->numResults(), 1u);
}

TEST(OpsetConversion, UnknownAttributeRefused) {
  ModelBuilder B(13);
  B.input("x", {"4"});
  setInt(B.node("Relu", {"x"}, {"y"}, "r"), "frobnicate", 1);
  B.output("y");
  std::string E = errorText(B.import());
  EXPECT_NE(E.find("Relu node 'r'"), std::string::npos) << E;
  EXPECT_NE(E.find("'frobnicate'"), std::string::npos) << E;
}

TEST(OpsetConversion, MaxPool1AndConv1) {
  ModelBuilder B(1);
  B.input("x", {"1", "1", "4", "4"});
  B.initFloats("w", std::vector<float>(9, 1.0f), {1, 1, 3, 3});
  auto &C = B.node("Conv", {"x", "w"}, {"c"});
  setInts(C, "kernel_shape", {3, 3});
  setInts(C, "pads", {1, 1, 1, 1});
  auto &P = B.node("MaxPool", {"c"}, {"p"});
  setInts(P, "kernel_shape", {2, 2});
  setInts(P, "strides", {2, 2});
  B.node("GlobalAveragePool", {"p"}, {"g"});
  B.output("g");
  ASSERT_IMPORTS(G, B);
  EXPECT_EQ(opSequence(G), "Conv MaxPool GlobalAveragePool");
  EXPECT_EQ(typeToString(firstNode(G, OpKind::MaxPool)->result()->type()),
            "f32[1,1,2,2]");
}

TEST(OpsetConversion, ResolveVersions) {
  using onnximport::resolveOpVersion;
  EXPECT_EQ(resolveOpVersion("Clip", 10), 6);
  EXPECT_EQ(resolveOpVersion("Clip", 11), 11);
  EXPECT_EQ(resolveOpVersion("Softmax", 12), 11);
  EXPECT_EQ(resolveOpVersion("ReduceMean", 17), 13);
  EXPECT_EQ(resolveOpVersion("ReduceMean", 21), 18);
  EXPECT_EQ(resolveOpVersion("Gelu", 19), 0);
  EXPECT_EQ(resolveOpVersion("LayerNormalization", 21), 17);
  EXPECT_EQ(resolveOpVersion("NoSuchOp", 21), 0);
}

} // namespace

namespace {

TEST(OpsetConversion, Clip6BoundMustFitIntegerInput) {
  ModelBuilder B(6);
  B.input("x", {"3"}, onnx::TensorProto::INT32);
  setFloat(B.node("Clip", {"x"}, {"y"}, "c"), "max", 1e30f);
  B.output("y");
  std::string E = errorText(B.import());
  EXPECT_NE(E.find("Clip node 'c'"), std::string::npos) << E;
  EXPECT_NE(E.find("does not fit"), std::string::npos) << E;
}

} // namespace

TEST(OpsetConversion, NewReducesTakeAxesAsInputFrom18) {
  // ReduceMin..ReduceSumSquare moved axes to an input at 18, as
  // ReduceMean/ReduceMax did.
  ModelBuilder B(17);
  B.input("x", {"2", "3", "4"});
  auto &L = B.node("ReduceLogSumExp", {"x"}, {"l"});
  setInts(L, "axes", {0, -1});
  setInt(L, "keepdims", 0);
  B.node("ReduceProd", {"l"}, {"p"}); // no axes: all dims
  B.output("p");
  ASSERT_IMPORTS(G, B);
  Node *LN = firstNode(G, OpKind::ReduceLogSumExp);
  EXPECT_EQ(constValues(LN->operand(1)), (std::vector<double>{0, -1}));
  EXPECT_EQ(typeToString(LN->result()->type()), "f32[3]");
  EXPECT_EQ(firstNode(G, OpKind::ReduceProd)->numOperands(), 1u);
  EXPECT_EQ(typeToString(G.outputs()[0]->type()), "f32[1]");

  ModelBuilder C(18);
  C.input("x", {"2", "3"});
  C.initInt64s("ax", {1});
  auto &M = C.node("ReduceMin", {"x", "ax"}, {"m"});
  setInt(M, "noop_with_empty_axes", 1);
  C.output("m");
  ASSERT_IMPORTS(H, C);
  Node *MN = firstNode(H, OpKind::ReduceMin);
  EXPECT_EQ(MN->operand(1), H.lookup("ax"));
  EXPECT_EQ(typeToString(MN->result()->type()), "f32[2,1]");
}

TEST(OpsetConversion, ArgMaxAttributesAndI64Result) {
  ModelBuilder B(13);
  B.input("x", {"2", "3", "4"});
  auto &A = B.node("ArgMax", {"x"}, {"a"});
  setInt(A, "axis", -2);
  setInt(A, "keepdims", 0);
  setInt(A, "select_last_index", 1);
  B.node("ArgMin", {"x"}, {"b"}); // axis 0, keepdims 1 by default
  B.output("a");
  B.output("b");
  ASSERT_IMPORTS(G, B);
  Node *AN = firstNode(G, OpKind::ArgMax);
  EXPECT_EQ(AN->attrs().getInt("select_last_index", 0), 1);
  EXPECT_EQ(typeToString(G.lookup("a")->type()), "i64[2,4]");
  EXPECT_EQ(typeToString(G.lookup("b")->type()), "i64[1,3,4]");
}

TEST(OpsetConversion, ArgMinAxisOutOfRangeNamesTheNode) {
  ModelBuilder B(13);
  B.input("x", {"2", "3"});
  setInt(B.node("ArgMin", {"x"}, {"a"}, "am"), "axis", 2);
  B.output("a");
  std::string E = errorText(B.import());
  EXPECT_NE(E.find("ArgMin node 'am'"), std::string::npos) << E;
  EXPECT_NE(E.find("out of range"), std::string::npos) << E;
}

TEST(OpsetConversion, Resize11EmptyPlaceholdersAreAbsent) {
  ModelBuilder B(11);
  B.input("x", {"1", "1", "2", "3"});
  B.initFloats("roi", {}, {0});
  B.initFloats("scales", {}, {0});
  B.initInt64s("sizes", {1, 1, 4, 5});
  auto &N = B.node("Resize", {"x", "roi", "scales", "sizes"}, {"y"});
  setString(N, "mode", "linear");
  B.output("y");
  ASSERT_IMPORTS(G, B);
  Node *R = firstNode(G, OpKind::Resize);
  ASSERT_TRUE(R);
  EXPECT_EQ(R->operand(1), nullptr);
  EXPECT_EQ(R->operand(2), nullptr);
  EXPECT_EQ(typeToString(R->result()->type()), "f32[1,1,4,5]");
}

TEST(OpsetConversion, UpsampleAndResize10AreAsymmetricFloor) {
  ModelBuilder B(7);
  B.input("x", {"1", "1", "2", "2"});
  setFloats(B.node("Upsample", {"x"}, {"y"}), "scales", {1, 1, 2, 3});
  B.output("y");
  ASSERT_IMPORTS(G, B);
  Node *R = firstNode(G, OpKind::Resize);
  ASSERT_TRUE(R);
  EXPECT_EQ(R->attrs().getString("coordinate_transformation_mode", ""),
            "asymmetric");
  EXPECT_EQ(R->attrs().getString("nearest_mode", ""), "floor");
  EXPECT_EQ(typeToString(R->result()->type()), "f32[1,1,4,6]");

  ModelBuilder C(10);
  C.input("x", {"1", "1", "2", "2"});
  C.input("s", {"4"});
  setString(C.node("Resize", {"x", "s"}, {"y"}, "r10"), "mode", "cubic");
  C.output("y");
  std::string E = errorText(C.import());
  EXPECT_NE(E.find("Resize node 'r10'"), std::string::npos) << E;
  EXPECT_NE(E.find("mode 'cubic' is not nearest or linear"), std::string::npos)
      << E;
}

TEST(OpsetConversion, DataDependentShapesAreRefusedAsSuch) {
  ModelBuilder B(13);
  B.input("x", {"2", "3"});
  B.node("NonZero", {"x"}, {"i"}, "nz");
  B.node("Unique", {"x"}, {"u"}, "uq");
  B.output("i");
  B.output("u");
  std::string E = errorText(B.import());
  EXPECT_NE(E.find("NonZero (data-dependent output shape) (nodes: nz)"),
            std::string::npos)
      << E;
  EXPECT_NE(E.find("Unique (data-dependent output shape) (nodes: uq)"),
            std::string::npos)
      << E;
}
