//===- OnnxWireTest.cpp - Cutting weights out of serialized models --------===//
//
// splitWeights must leave a skeleton that parses to the same model minus
// the initializers' raw_data, hand back each raw_data as a slice of the
// input, and refuse bytes that are not wire format (negative twins).
//
//===----------------------------------------------------------------------===//
#include "frontend/OnnxWire.h"
#include "ModelBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "gtest/gtest.h"

using namespace solder;
using namespace solder::testing;

namespace {

ModelBuilder addModel() {
  ModelBuilder B(13);
  B.input("x", {"2", "3"});
  B.initFloats("w", {1, 2, 3, 4, 5, 6}, {2, 3});
  B.initInt64s("shape", {3, 2});
  onnx::TensorProto &Typed =
      B.initializer("typed", Tensor::fromFloats({7, 8}, {2}));
  Typed.clear_raw_data();
  Typed.add_float_data(7);
  Typed.add_float_data(8);
  B.node("Add", {"x", "w"}, {"s"}, "add");
  B.node("Reshape", {"s", "shape"}, {"y"}, "reshape");
  B.output("y");
  return B;
}

TEST(OnnxWire, SkeletonParsesWithoutRawData) {
  ModelBuilder B = addModel();
  std::string Bytes = B.bytes();
  auto S = onnximport::splitWeights(Bytes);
  ASSERT_TRUE(bool(S)) << llvm::toString(S.takeError());
  ASSERT_EQ(S->RawData.size(), 3u);
  ASSERT_TRUE(S->RawData[0] && S->RawData[1]);
  EXPECT_FALSE(S->RawData[2]) << "typed-field data is not raw_data";
  EXPECT_EQ(S->RawData[0]->size(), 24u);
  EXPECT_EQ(S->RawData[1]->size(), 16u);
  EXPECT_EQ(S->RawBytes, 40u);
  // The slices point into the input, not into copies.
  EXPECT_GE(S->RawData[0]->data(), Bytes.data());
  EXPECT_LE(S->RawData[0]->end(), Bytes.data() + Bytes.size());
  EXPECT_EQ(*S->RawData[0], B.G->initializer(0).raw_data());

  onnx::ModelProto M;
  ASSERT_TRUE(M.ParseFromString(S->Skeleton));
  onnx::ModelProto Expected = B.M;
  for (onnx::TensorProto &T : *Expected.mutable_graph()->mutable_initializer())
    T.clear_raw_data();
  EXPECT_EQ(M.SerializeAsString(), Expected.SerializeAsString());
}

TEST(OnnxWire, ModelWithoutInitializersIsUnchanged) {
  ModelBuilder B(13);
  B.input("x", {"2"});
  B.node("Relu", {"x"}, {"y"}, "r");
  B.output("y");
  auto S = onnximport::splitWeights(B.bytes());
  ASSERT_TRUE(bool(S)) << llvm::toString(S.takeError());
  EXPECT_TRUE(S->RawData.empty());
  EXPECT_EQ(S->Skeleton, B.bytes());
}

TEST(OnnxWire, MalformedBytesAreRefused) {
  std::string Bytes = addModel().bytes();
  for (size_t Cut : {size_t(1), Bytes.size() / 2, Bytes.size() - 1}) {
    auto S = onnximport::splitWeights(llvm::StringRef(Bytes).take_front(Cut));
    if (S) // a cut between fields is valid wire format; the parse decides
      continue;
    EXPECT_NE(llvm::toString(S.takeError()).find("not a valid ONNX model"),
              std::string::npos);
  }
  auto Bad = onnximport::splitWeights(llvm::StringRef("\x3a\xff\xff\x01", 4));
  ASSERT_FALSE(bool(Bad)) << "a length past the end";
  llvm::consumeError(Bad.takeError());
  auto Group = onnximport::splitWeights(llvm::StringRef("\x0b", 1));
  ASSERT_FALSE(bool(Group)) << "wire type 3 (group)";
  llvm::consumeError(Group.takeError());
}

TEST(OnnxWire, ImportedFileWeightsViewTheFile) {
  ModelBuilder B = addModel();
  llvm::SmallString<128> Path;
  int FD;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("wire", "onnx", FD, Path));
  {
    llvm::raw_fd_ostream OS(FD, /*shouldClose=*/true);
    OS << B.bytes();
  }
  auto G = importOnnxFile(Path);
  llvm::sys::fs::remove(Path);
  ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
  const Value *W = (*G)->lookup("w");
  ASSERT_TRUE(W && W->isConstant());
  EXPECT_EQ(W->constant()->getDouble(5), 6.0);
  const Value *Typed = (*G)->lookup("typed");
  ASSERT_TRUE(Typed && Typed->isConstant());
  EXPECT_EQ(Typed->constant()->getDouble(1), 8.0);
}

TEST(OnnxWire, WrongRawSizeIsStillRefused) {
  ModelBuilder B = addModel();
  B.G->mutable_initializer(0)->mutable_raw_data()->resize(20);
  std::string E = errorText(B.import());
  EXPECT_NE(E.find("initializer 'w' has 20 bytes of raw data"),
            std::string::npos)
      << E;
}

} // namespace
