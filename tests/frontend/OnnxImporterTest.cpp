//===- OnnxImporterTest.cpp - Graph building from ModelProtos -------------===//
//
// Inputs versus initializers, symbolic and anonymous dims, the InputShapes
// and SymbolSizes options, outputs, name hygiene, and imports of the real
// models in the shared folder.
//
//===----------------------------------------------------------------------===//
#include "ModelBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "gtest/gtest.h"

using namespace solder;
using namespace solder::testing;

namespace {

#define EXPECT_CONTAINS(Text, Sub)                                             \
  EXPECT_NE((Text).find(Sub), std::string::npos) << (Text)

TEST(OnnxImporter, InitializerListedAsInputIsAConstant) {
  ModelBuilder B(7);
  B.input("x", {"2"});
  B.input("w", {"2"}); // IR < 4 style: initializers repeated as inputs
  B.initFloats("w", {1, 2}, {2});
  B.node("Add", {"x", "w"}, {"y"});
  B.output("y");
  ASSERT_IMPORTS(G, B);
  ASSERT_EQ(G.inputs().size(), 1u);
  EXPECT_EQ(G.inputs()[0]->name(), "x");
  EXPECT_TRUE(G.lookup("w")->isConstant());
  EXPECT_EQ(G.opsetVersion(), 7);
}

TEST(OnnxImporter, SymbolicAndAnonymousDims) {
  ModelBuilder B(13);
  B.input("x", {"N", "", "3"});
  B.node("Relu", {"x"}, {"y"});
  B.output("y");
  ASSERT_IMPORTS(G, B);
  const Shape &S = G.inputs()[0]->shape();
  ASSERT_EQ(S.size(), 3u);
  EXPECT_TRUE(S[0].isSymbol());
  EXPECT_EQ(S[0].symbol(), "N");
  EXPECT_TRUE(S[1].isSymbol());
  EXPECT_EQ(S[1].symbol(), "x_d1");
  EXPECT_EQ(S[2], Dim(3));
  EXPECT_EQ(typeToString(G.outputs()[0]->type()), "f32[N,x_d1,3]");
}

TEST(OnnxImporter, InputShapesBindSymbolsEverywhere) {
  ModelBuilder B(13);
  B.input("ids", {"B", "S"}, onnx::TensorProto::INT64);
  B.input("mask", {"B", "S"}, onnx::TensorProto::INT64);
  B.node("Add", {"ids", "mask"}, {"y"});
  B.output("y");
  ImportOptions O;
  O.InputShapes["ids"] = {1, 128};
  ASSERT_IMPORTS(G, B, O);
  EXPECT_EQ(typeToString(G.inputs()[1]->type()), "i64[1,128]");
  EXPECT_EQ(typeToString(G.outputs()[0]->type()), "i64[1,128]");
}

TEST(OnnxImporter, SymbolSizes) {
  ModelBuilder B(13);
  B.input("x", {"N", "C"});
  B.node("Relu", {"x"}, {"y"});
  B.output("y");
  ImportOptions O;
  O.SymbolSizes["N"] = 4;
  ASSERT_IMPORTS(G, B, O);
  EXPECT_EQ(typeToString(G.inputs()[0]->type()), "f32[4,C]");

  ImportOptions Bad;
  Bad.SymbolSizes["Q"] = 2;
  EXPECT_CONTAINS(errorText(B.import(Bad)), "'Q'");

  ImportOptions Conflict;
  Conflict.InputShapes["x"] = {2, 3};
  Conflict.SymbolSizes["N"] = 5;
  EXPECT_CONTAINS(errorText(B.import(Conflict)), "'N'");
}

TEST(OnnxImporter, OutputsByNameIncludingInputsAndConstants) {
  ModelBuilder B(13);
  B.input("x", {"2"});
  B.initFloats("w", {1, 2}, {2});
  B.node("Add", {"x", "w"}, {"y"});
  B.output("y");
  B.output("x");
  B.output("w");
  ASSERT_IMPORTS(G, B);
  ASSERT_EQ(G.outputs().size(), 3u);
  EXPECT_EQ(G.outputs()[0]->name(), "y");
  EXPECT_TRUE(G.outputs()[1]->isGraphInput());
  EXPECT_TRUE(G.outputs()[2]->isConstant());
}

TEST(OnnxImporter, GeneratedNamesAvoidModelNames) {
  // Clip-6 creates constants named after the node ("c.min"); the model
  // uses that name later, so the generated one must differ.
  ModelBuilder B(6);
  B.input("x", {"2"});
  setFloat(B.node("Clip", {"x"}, {"y"}, "c"), "min", 0.0f);
  B.node("Relu", {"y"}, {"c.min"});
  B.output("c.min");
  ASSERT_IMPORTS(G, B);
  Node *C = firstNode(G, OpKind::Clip);
  EXPECT_NE(C->operand(1)->name(), "c.min");
  EXPECT_TRUE(C->operand(1)->isConstant());
  EXPECT_EQ(G.lookup("c.min")->producer()->kind(), OpKind::Relu);
}

TEST(OnnxImporter, NodeNamesKept) {
  ModelBuilder B(13);
  B.input("x", {"2"});
  B.node("Relu", {"x"}, {"a"}, "first");
  B.node("Neg", {"a"}, {"y"});
  B.output("y");
  ASSERT_IMPORTS(G, B);
  EXPECT_EQ(G.nodes().front()->name(), "first");
  EXPECT_EQ(G.nodes().back()->name(), "");
}

TEST(OnnxImporter, ModelWithoutOpsetImportIsOpset1) {
  ModelBuilder B(1);
  B.M.clear_opset_import();
  B.input("x", {"2"});
  setInts(B.node("Relu", {"x"}, {"y"}), "consumed_inputs", {0});
  B.output("y");
  ASSERT_IMPORTS(G, B);
  EXPECT_EQ(G.opsetVersion(), 1);
}

TEST(OnnxImporter, SharedModels) {
  std::string Dir = std::string(SOLDER_SHARED_DIR) + "/models";
  if (!llvm::sys::fs::exists(Dir))
    GTEST_SKIP() << "shared models not found at " << Dir;
  struct Case {
    const char *File;
    const char *Shape; // input to bind, if any
    std::vector<int64_t> Dims;
  } Cases[] = {
      {"mobilenetv2_050_opset17.onnx", "input", {1, 3, 96, 96}},
      {"resnet10_dynamo.onnx", nullptr, {}},
      {"squeezenet11_opset13.onnx", nullptr, {}},
      {"bert_mini_opset14.onnx", "input_ids", {1, 16}},
      {"bert_mini_dynamo.onnx", nullptr, {}},
  };
  for (const Case &C : Cases) {
    std::string Path = Dir + "/" + C.File;
    if (!llvm::sys::fs::exists(Path))
      continue;
    // Unbound symbolic dims must import too.
    auto G = importOnnxFile(Path);
    ASSERT_TRUE(bool(G)) << C.File << ": " << llvm::toString(G.takeError());
    EXPECT_FALSE((*G)->nodes().empty()) << C.File;
    for (Value *O : (*G)->outputs())
      EXPECT_NE(O->dtype(), DType::Undefined) << C.File;
    if (C.Shape) {
      ImportOptions O;
      O.InputShapes[C.Shape] = C.Dims;
      auto GS = importOnnxFile(Path, O);
      ASSERT_TRUE(bool(GS)) << C.File << ": " << llvm::toString(GS.takeError());
      EXPECT_TRUE((*GS)->inputs()[0]->type().isStatic()) << C.File;
    }
  }
}

} // namespace
