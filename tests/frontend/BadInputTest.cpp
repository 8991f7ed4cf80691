//===- BadInputTest.cpp - Malformed models give clear errors --------------===//
//
// Each malformed or unsupported model must produce an llvm::Error whose text
// names what is wrong (node, value, initializer), never a crash. Run under
// -DSOLDER_SANITIZE=ON these also check for memory errors.
//
//===----------------------------------------------------------------------===//
#include "ModelBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"
#include <random>

using namespace solder;
using namespace solder::testing;

namespace {

#define EXPECT_CONTAINS(Text, Sub)                                             \
  EXPECT_NE((Text).find(Sub), std::string::npos) << (Text)

ModelBuilder reluModel() {
  ModelBuilder B(13);
  B.input("x", {"2", "3"});
  B.node("Relu", {"x"}, {"y"}, "r");
  B.output("y");
  return B;
}

TEST(BadInput, EmptyBytes) {
  std::string E = errorText(importOnnxBytes("", ""));
  EXPECT_CONTAINS(E, "empty");
}

TEST(BadInput, EmptyFile) {
  llvm::SmallString<128> Path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("empty", "onnx", Path));
  std::string E = errorText(importOnnxFile(Path));
  llvm::sys::fs::remove(Path);
  EXPECT_CONTAINS(E, "empty");
}

TEST(BadInput, MissingFile) {
  std::string E = errorText(importOnnxFile("/nonexistent/dir/model.onnx"));
  EXPECT_CONTAINS(E, "cannot open");
}

TEST(BadInput, RandomBytes) {
  std::mt19937 Rng(42);
  for (int Trial = 0; Trial < 200; ++Trial) {
    std::string Bytes(1 + Rng() % 512, '\0');
    for (char &C : Bytes)
      C = char(Rng());
    auto R = importOnnxBytes(Bytes, "");
    EXPECT_FALSE(bool(R)) << "trial " << Trial;
    if (!R)
      llvm::consumeError(R.takeError());
  }
}

TEST(BadInput, TruncatedModel) {
  ModelBuilder B = reluModel();
  B.initFloats("w", std::vector<float>(64, 1.0f), {64});
  std::string Full = B.bytes();
  ASSERT_TRUE(bool(importOnnxBytes(Full, "")));
  // The opset import is serialized after the graph; a prefix ending exactly
  // at the graph's end is a valid (opset-1) model. Every prefix that cuts
  // into the graph must fail cleanly (most fail to parse, some parse to an
  // incomplete model).
  onnx::ModelProto NoOpset = B.M;
  NoOpset.clear_opset_import();
  size_t GraphEnd = NoOpset.ByteSizeLong();
  ASSERT_LT(GraphEnd, Full.size());
  for (size_t Len = 1; Len < GraphEnd; Len += 3) {
    auto R = importOnnxBytes(llvm::StringRef(Full).take_front(Len), "");
    EXPECT_FALSE(bool(R)) << "prefix of " << Len << " bytes";
    if (!R)
      llvm::consumeError(R.takeError());
  }
}

TEST(BadInput, BundledBadFiles) {
  std::string Dir = std::string(SOLDER_TEST_DATA_DIR) + "/bad";
  for (const char *Name : {"truncated.onnx", "random.onnx", "empty.onnx"}) {
    std::string E = errorText(importOnnxFile(Dir + "/" + Name));
    EXPECT_FALSE(E.empty()) << Name;
    EXPECT_CONTAINS(E, Name);
  }
}

TEST(BadInput, DanglingValue) {
  ModelBuilder B(13);
  B.input("x", {"2"});
  B.node("Add", {"x", "ghost"}, {"y"}, "adder");
  B.output("y");
  std::string E = errorText(B.import());
  EXPECT_CONTAINS(E, "Add node 'adder'");
  EXPECT_CONTAINS(E, "'ghost'");
}

TEST(BadInput, CycleReported) {
  ModelBuilder B(13);
  B.input("x", {"2"});
  B.node("Add", {"x", "b"}, {"a"}, "first");
  B.node("Relu", {"a"}, {"b"}, "second");
  B.node("Relu", {"b"}, {"y"}, "after");
  B.output("y");
  std::string E = errorText(B.import());
  EXPECT_CONTAINS(E, "cycle");
  EXPECT_TRUE(E.find("'first'") != std::string::npos ||
              E.find("'second'") != std::string::npos)
      << E;
}

TEST(BadInput, OutOfOrderNodesAreSorted) {
  ModelBuilder B(13);
  B.input("x", {"2"});
  B.node("Neg", {"a"}, {"y"}, "late");
  B.node("Relu", {"x"}, {"a"}, "early");
  B.output("y");
  ASSERT_IMPORTS(G, B);
  EXPECT_EQ(opSequence(G), "Relu Neg");
}

TEST(BadInput, UnsupportedOpsListedTogether) {
  ModelBuilder B(13);
  B.input("x", {"2"});
  B.node("Foo", {"x"}, {"a"}, "n1");
  B.node("Relu", {"a"}, {"b"}, "ok");
  B.node("Bar", {"b"}, {"c"}, "n3");
  B.node("Foo", {"c"}, {"d"}, "n2");
  auto &MS = B.node("FusedGemm", {"d"}, {"y"}, "ms");
  MS.set_domain("com.microsoft");
  B.output("y");
  std::string E = errorText(B.import());
  EXPECT_CONTAINS(E, "unsupported ops: Foo (nodes: n1, n2); Bar (nodes: n3); "
                     "com.microsoft.FusedGemm (nodes: ms)");
}

TEST(BadInput, WrongInputRankViaInputShapes) {
  ModelBuilder B = reluModel();
  ImportOptions O;
  O.InputShapes["x"] = {2, 3, 4};
  std::string E = errorText(B.import(O));
  EXPECT_CONTAINS(E, "'x'");
  EXPECT_CONTAINS(E, "rank");
}

TEST(BadInput, InputShapeContradictsStaticDim) {
  ModelBuilder B = reluModel();
  ImportOptions O;
  O.InputShapes["x"] = {2, 4};
  std::string E = errorText(B.import(O));
  EXPECT_CONTAINS(E, "'x' has dim 1 = 3");
}

TEST(BadInput, InputShapeForUnknownInput) {
  ModelBuilder B = reluModel();
  ImportOptions O;
  O.InputShapes["nope"] = {1};
  EXPECT_CONTAINS(errorText(B.import(O)), "'nope'");
}

TEST(BadInput, ImpossibleReshape) {
  ModelBuilder B(13);
  B.input("x", {"2", "3"});
  B.initInt64s("shape", {4, 2});
  B.node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  B.output("y");
  std::string E = errorText(B.import());
  EXPECT_CONTAINS(E, "Reshape node 'reshape'");
}

TEST(BadInput, InitializerRawDataTooShort) {
  ModelBuilder B(13);
  B.input("x", {"4"});
  auto &W = B.initFloats("w", {1, 2, 3, 4}, {4});
  W.mutable_raw_data()->resize(10);
  B.node("Add", {"x", "w"}, {"y"});
  B.output("y");
  std::string E = errorText(B.import());
  EXPECT_CONTAINS(E, "initializer 'w'");
  EXPECT_CONTAINS(E, "10 bytes");
}

TEST(BadInput, HugeDimRejected) {
  ModelBuilder B(13);
  B.input("x", {"4"});
  auto *T = B.G->add_initializer();
  T->set_name("big");
  T->set_data_type(onnx::TensorProto::FLOAT);
  T->add_dims(int64_t(1) << 40);
  B.node("Add", {"x", "big"}, {"y"});
  B.output("y");
  std::string E = errorText(B.import());
  EXPECT_CONTAINS(E, "initializer 'big'");
  EXPECT_CONTAINS(E, "1099511627776");
}

TEST(BadInput, HugeInputDimRejected) {
  ModelBuilder B(13);
  B.input("x", {"1099511627776"});
  B.node("Relu", {"x"}, {"y"});
  B.output("y");
  std::string E = errorText(B.import());
  EXPECT_CONTAINS(E, "'x'");
  EXPECT_CONTAINS(E, "1099511627776");
}

TEST(BadInput, HugeElementCountRejected) {
  ModelBuilder B(13);
  auto *T = B.G->add_initializer();
  T->set_name("w");
  T->set_data_type(onnx::TensorProto::FLOAT);
  for (int I = 0; I < 3; ++I)
    T->add_dims(int64_t(1) << 30);
  B.input("x", {"1"});
  B.node("Add", {"x", "w"}, {"y"});
  B.output("y");
  std::string E = errorText(B.import());
  EXPECT_CONTAINS(E, "initializer 'w'");
  EXPECT_CONTAINS(E, "elements");
}

TEST(BadInput, DuplicateProducer) {
  ModelBuilder B(13);
  B.input("x", {"2"});
  B.node("Relu", {"x"}, {"y"}, "a");
  B.node("Neg", {"x"}, {"y"}, "b");
  B.output("y");
  std::string E = errorText(B.import());
  EXPECT_CONTAINS(E, "redefines 'y'");
}

TEST(BadInput, NodeRedefinesInput) {
  ModelBuilder B(13);
  B.input("x", {"2"});
  B.node("Relu", {"x"}, {"x"}, "self");
  B.output("x");
  EXPECT_CONTAINS(errorText(B.import()), "Relu node 'self' redefines 'x'");
}

TEST(BadInput, MissingOutput) {
  ModelBuilder B = reluModel();
  B.output("nowhere");
  EXPECT_CONTAINS(errorText(B.import()), "'nowhere'");
}

TEST(BadInput, WrongOperandCount) {
  ModelBuilder B(13);
  B.input("x", {"2"});
  B.node("Add", {"x"}, {"y"}, "lonely");
  B.output("y");
  std::string E = errorText(B.import());
  EXPECT_CONTAINS(E, "Add node 'lonely'");
  EXPECT_CONTAINS(E, "inputs");
}

TEST(BadInput, InputWithoutShape) {
  ModelBuilder B(13);
  auto *VI = B.G->add_input();
  VI->set_name("x");
  VI->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  B.node("Relu", {"x"}, {"y"});
  B.output("y");
  EXPECT_CONTAINS(errorText(B.import()), "'x' has no shape");
  ImportOptions O;
  O.InputShapes["x"] = {5};
  ASSERT_IMPORTS(G, B, O);
  EXPECT_EQ(typeToString(G.outputs()[0]->type()), "f32[5]");
}

TEST(BadInput, StringInputRefused) {
  ModelBuilder B(13);
  B.input("x", {"2"}, onnx::TensorProto::STRING);
  B.node("Identity", {"x"}, {"y"});
  B.output("y");
  std::string E = errorText(B.import());
  EXPECT_CONTAINS(E, "'x'");
  EXPECT_CONTAINS(E, "STRING");
}

TEST(BadInput, ExternalDataWithoutBaseDir) {
  ModelBuilder B(13);
  B.input("x", {"1"});
  auto *T = B.G->add_initializer();
  T->set_name("w");
  T->set_data_type(onnx::TensorProto::FLOAT);
  T->add_dims(1);
  T->set_data_location(onnx::TensorProto::EXTERNAL);
  auto *KV = T->add_external_data();
  KV->set_key("location");
  KV->set_value("w.bin");
  B.node("Add", {"x", "w"}, {"y"});
  B.output("y");
  EXPECT_CONTAINS(errorText(B.import()), "initializer 'w'");
}

TEST(BadInput, OpsetTooNew) {
  ModelBuilder B(99);
  B.input("x", {"2"});
  B.node("Relu", {"x"}, {"y"});
  B.output("y");
  EXPECT_CONTAINS(errorText(B.import()), "opset 99");
}

} // namespace

namespace {

/// Corrupting bytes of a valid model must never crash the importer (or the
/// shape inference it runs): every outcome is a graph or an error.
TEST(BadInput, MutatedModelsNeverCrash) {
  ModelBuilder B(11);
  B.input("x", {"N", "2", "4", "4"});
  B.initFloats("w", std::vector<float>(2 * 2 * 9, 0.5f), {2, 2, 3, 3});
  for (const char *P : {"scale", "bias", "mean", "var"})
    B.initFloats(P, {1, 2}, {2});
  auto &C = B.node("Conv", {"x", "w"}, {"c"}, "conv");
  setInts(C, "pads", {1, 1, 1, 1});
  B.node("BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {"b"},
         "bn");
  setInt(B.node("Softmax", {"b"}, {"s"}, "sm"), "axis", 1);
  B.initInt64s("shape", {0, -1});
  B.node("Reshape", {"s", "shape"}, {"r"}, "reshape");
  setInts(B.node("Unsqueeze", {"r"}, {"y"}, "unsq"), "axes", {0});
  B.output("y");
  std::string Full = B.bytes();
  ASSERT_TRUE(bool(importOnnxBytes(Full, ""))) << "the unmutated model";
  std::mt19937 Rng(7);
  int Imported = 0;
  for (int Trial = 0; Trial < 1000; ++Trial) {
    std::string Bytes = Full;
    for (int K = 1 + Rng() % 3; K > 0; --K)
      Bytes[Rng() % Bytes.size()] = char(Rng());
    auto R = importOnnxBytes(Bytes, "");
    if (R)
      ++Imported;
    else
      llvm::consumeError(R.takeError());
  }
  // Mutations of weight bytes leave the model valid, so some must import.
  EXPECT_GT(Imported, 0);
}

} // namespace
