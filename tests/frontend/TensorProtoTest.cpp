//===- TensorProtoTest.cpp - TensorProto <-> Tensor, external data --------===//
//
// Every dtype through raw_data and through its typed field, the
// no-copy move of raw_data, .pb file round trips, and external data files
// (found inside the model folder, refused outside it).
//
//===----------------------------------------------------------------------===//
#include "frontend/TensorProto.h"
#include "ModelBuilder.h"
#include "frontend/ModelSummary.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

using namespace solder;
using namespace solder::onnximport;
using namespace solder::testing;
using onnx::TensorProto;

namespace {

#define EXPECT_CONTAINS(Text, Sub)                                             \
  EXPECT_NE((Text).find(Sub), std::string::npos) << (Text)

/// A temporary folder removed at the end of the test.
struct TempDir {
  llvm::SmallString<128> Path;
  TempDir() {
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("solder-front", Path));
  }
  ~TempDir() { llvm::sys::fs::remove_directories(Path); }
  std::string file(llvm::StringRef Name) const {
    llvm::SmallString<128> P(Path);
    llvm::sys::path::append(P, Name);
    return std::string(P);
  }
  void write(llvm::StringRef Name, llvm::StringRef Bytes) const {
    std::error_code EC;
    llvm::raw_fd_ostream OS(file(Name), EC);
    ASSERT_FALSE(EC);
    OS << Bytes;
  }
};

llvm::Expected<Tensor> convert(TensorProto TP, llvm::StringRef Dir = "") {
  return tensorFromProto(TP, Dir, "tensor 't'");
}

TEST(TensorProto, RawDataMovesWithoutCopy) {
  TensorProto TP;
  TP.set_data_type(TensorProto::FLOAT);
  TP.add_dims(2);
  float V[2] = {1.5f, -2.0f};
  TP.set_raw_data(reinterpret_cast<char *>(V), 8);
  auto T = tensorFromProto(TP, "", "t");
  ASSERT_TRUE(bool(T)) << llvm::toString(T.takeError());
  EXPECT_TRUE(TP.raw_data().empty());
  EXPECT_EQ(T->getDouble(0), 1.5);
  EXPECT_EQ(T->getDouble(1), -2.0);

  TensorProto Big;
  Big.set_data_type(TensorProto::UINT8);
  Big.add_dims(4096);
  Big.mutable_raw_data()->assign(4096, '\x07');
  const char *BigData = Big.raw_data().data();
  auto BT = tensorFromProto(Big, "", "big");
  ASSERT_TRUE(bool(BT));
  EXPECT_EQ(static_cast<const char *>(BT->rawData()), BigData);
}

TEST(TensorProto, EveryDTypeRoundTripsThroughRawData) {
  for (DType D : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8,
                  DType::U8, DType::I16, DType::U16, DType::I32, DType::U32,
                  DType::I64, DType::U64, DType::Bool}) {
    Tensor T(D, {2, 3});
    for (int I = 0; I < 6; ++I)
      T.setDouble(I, D == DType::Bool ? I % 2 : I + 1);
    TensorProto TP;
    tensorToProto(T, "t", TP);
    EXPECT_EQ(TP.name(), "t");
    auto Back = convert(TP);
    ASSERT_TRUE(bool(Back)) << dtypeName(D).str();
    EXPECT_TRUE(Back->bitwiseEqual(T)) << dtypeName(D).str();
  }
}

TEST(TensorProto, TypedFields) {
  {
    TensorProto TP;
    TP.set_data_type(TensorProto::FLOAT);
    TP.add_dims(3);
    for (float F : {1.0f, 2.5f, -3.0f})
      TP.add_float_data(F);
    auto T = convert(TP);
    ASSERT_TRUE(bool(T));
    EXPECT_EQ(T->getDouble(2), -3.0);
  }
  {
    TensorProto TP;
    TP.set_data_type(TensorProto::DOUBLE);
    TP.add_double_data(0.25);
    auto T = convert(TP);
    ASSERT_TRUE(bool(T));
    EXPECT_EQ(T->rank(), 0u);
    EXPECT_EQ(T->getDouble(0), 0.25);
  }
  {
    TensorProto TP;
    TP.set_data_type(TensorProto::INT64);
    TP.add_dims(2);
    TP.add_int64_data(int64_t(1) << 62);
    TP.add_int64_data(-5);
    auto T = convert(TP);
    ASSERT_TRUE(bool(T));
    EXPECT_EQ(T->getInt64(0), int64_t(1) << 62);
    EXPECT_EQ(T->getInt64(1), -5);
  }
  {
    TensorProto TP;
    TP.set_data_type(TensorProto::UINT64);
    TP.add_dims(1);
    TP.add_uint64_data(~uint64_t(0));
    auto T = convert(TP);
    ASSERT_TRUE(bool(T));
    EXPECT_EQ(T->data<uint64_t>()[0], ~uint64_t(0));
  }
  {
    TensorProto TP;
    TP.set_data_type(TensorProto::UINT32);
    TP.add_dims(1);
    TP.add_uint64_data(4000000000u);
    auto T = convert(TP);
    ASSERT_TRUE(bool(T));
    EXPECT_EQ(T->data<uint32_t>()[0], 4000000000u);
  }
  // Everything of 32 bits or fewer except float uses int32_data.
  struct Case {
    int32_t Type;
    int32_t Stored;
    double Expect;
  } Cases[] = {
      {TensorProto::INT32, -7, -7},
      {TensorProto::INT8, -100, -100},
      {TensorProto::UINT8, 200, 200},
      {TensorProto::INT16, -30000, -30000},
      {TensorProto::UINT16, 60000, 60000},
      {TensorProto::BOOL, 1, 1},
      {TensorProto::FLOAT16, floatToHalf(1.5f), 1.5},
      {TensorProto::BFLOAT16, floatToBF16(-2.0f), -2.0},
  };
  for (const Case &C : Cases) {
    TensorProto TP;
    TP.set_data_type(C.Type);
    TP.add_dims(1);
    TP.add_int32_data(C.Stored);
    auto T = convert(TP);
    ASSERT_TRUE(bool(T)) << C.Type;
    EXPECT_EQ(T->getDouble(0), C.Expect) << onnxTypeName(C.Type);
  }
}

TEST(TensorProto, TypedFieldCountMismatch) {
  TensorProto TP;
  TP.set_data_type(TensorProto::FLOAT);
  TP.add_dims(3);
  TP.add_float_data(1);
  std::string E = errorText(convert(TP));
  EXPECT_CONTAINS(E, "tensor 't'");
  EXPECT_CONTAINS(E, "float_data");
}

TEST(TensorProto, UnsupportedTypesAndDims) {
  TensorProto S;
  S.set_data_type(TensorProto::STRING);
  S.add_string_data("hi");
  EXPECT_CONTAINS(errorText(convert(S)), "STRING");

  TensorProto Neg;
  Neg.set_data_type(TensorProto::FLOAT);
  Neg.add_dims(-2);
  EXPECT_CONTAINS(errorText(convert(Neg)), "negative dim");

  TensorProto Huge;
  Huge.set_data_type(TensorProto::FLOAT);
  Huge.add_dims(int64_t(1) << 40);
  EXPECT_CONTAINS(errorText(convert(Huge)), "1099511627776");
}

TEST(TensorProto, PbFileRoundTrip) {
  TempDir D;
  Tensor T = Tensor::fromFloats({1, 2, 3, 4, 5, 6}, {3, 2});
  ASSERT_FALSE(bool(writeTensorProtoFile(D.file("t.pb"), T, "input_0")));
  auto Back = readTensorProtoFile(D.file("t.pb"));
  ASSERT_TRUE(bool(Back)) << llvm::toString(Back.takeError());
  EXPECT_TRUE(Back->bitwiseEqual(T));
  EXPECT_CONTAINS(errorText(readTensorProtoFile(D.file("missing.pb"))),
                  "missing.pb");
}

TEST(TensorProto, ReadsOnnxTestData) {
  std::string Dir = std::string(SOLDER_SHARED_DIR) +
                    "/onnx-tests/node/test_add/test_data_set_0";
  if (!llvm::sys::fs::exists(Dir))
    GTEST_SKIP() << "shared ONNX tests not found at " << Dir;
  auto T = readTensorProtoFile(Dir + "/input_0.pb");
  ASSERT_TRUE(bool(T)) << llvm::toString(T.takeError());
  EXPECT_EQ(typeToString(T->type()), "f32[3,4,5]");
}

/// A model whose initializer "w" ([4] f32) lives in an external file.
ModelBuilder externalModel(const std::string &Location, int64_t Offset = -1,
                           int64_t Length = -1) {
  ModelBuilder B(13);
  B.input("x", {"4"});
  auto *T = B.G->add_initializer();
  T->set_name("w");
  T->set_data_type(TensorProto::FLOAT);
  T->add_dims(4);
  T->set_data_location(TensorProto::EXTERNAL);
  auto Add = [&](const char *K, const std::string &V) {
    auto *KV = T->add_external_data();
    KV->set_key(K);
    KV->set_value(V);
  };
  Add("location", Location);
  if (Offset >= 0)
    Add("offset", std::to_string(Offset));
  if (Length >= 0)
    Add("length", std::to_string(Length));
  B.node("Add", {"x", "w"}, {"y"});
  B.output("y");
  return B;
}

std::string floatBytes(std::vector<float> V) {
  return std::string(reinterpret_cast<const char *>(V.data()), V.size() * 4);
}

TEST(TensorProto, ExternalDataInsideFolder) {
  TempDir D;
  llvm::sys::fs::create_directory(D.file("weights"));
  D.write("weights/w.bin", "PAD!" + floatBytes({1, 2, 3, 4}));
  ModelBuilder B = externalModel("weights/w.bin", 4, 16);
  D.write("model.onnx", B.bytes());
  auto G = importOnnxFile(D.file("model.onnx"));
  ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
  EXPECT_EQ(constValues((*G)->lookup("w")), (std::vector<double>{1, 2, 3, 4}));
  // importOnnxBytes resolves against the folder it is given.
  ASSERT_TRUE(bool(B.import({}, D.Path)));
}

TEST(TensorProto, SummaryNamesEveryExternalDataFile) {
  // An initializer's file, a Constant's, one named twice: what a model's
  // content depends on besides its own bytes (the plan cache hashes them).
  ModelBuilder B = externalModel("weights/w.bin");
  onnx::NodeProto &C = B.node("Constant", {}, {"c"});
  onnx::AttributeProto *A = C.add_attribute();
  A->set_name("value");
  A->set_type(onnx::AttributeProto::TENSOR);
  for (const char *Loc : {"c.bin", "weights/w.bin"}) {
    onnx::TensorProto *T =
        Loc[0] == 'c' ? A->mutable_t() : B.G->add_initializer();
    T->set_name(Loc[0] == 'c' ? "c" : "w2");
    T->set_data_type(TensorProto::FLOAT);
    T->add_dims(1);
    T->set_data_location(TensorProto::EXTERNAL);
    auto *KV = T->add_external_data();
    KV->set_key("location");
    KV->set_value(Loc);
  }
  auto S = summarizeOnnxBytes(B.bytes(), "m.onnx");
  ASSERT_TRUE(bool(S)) << llvm::toString(S.takeError());
  EXPECT_EQ(S->ExternalDataLocations,
            (std::vector<std::string>{"c.bin", "weights/w.bin"}));
}

TEST(TensorProto, SummaryOfAModelWithoutExternalDataNamesNoFile) {
  ModelBuilder B(13);
  B.input("x", {"4"});
  B.node("Relu", {"x"}, {"y"});
  B.output("y");
  auto S = summarizeOnnxBytes(B.bytes(), "m.onnx");
  ASSERT_TRUE(bool(S)) << llvm::toString(S.takeError());
  EXPECT_TRUE(S->ExternalDataLocations.empty());
}

TEST(TensorProto, ExternalDataEscapingFolderRefused) {
  TempDir Outer;
  llvm::sys::fs::create_directory(Outer.file("model"));
  Outer.write("secret.bin", floatBytes({9, 9, 9, 9}));
  std::string ModelDir = Outer.file("model");
  for (std::string Loc :
       {std::string("../secret.bin"), Outer.file("secret.bin"),
        std::string("sub/../../secret.bin")}) {
    std::string E = errorText(externalModel(Loc).import({}, ModelDir));
    EXPECT_CONTAINS(E, "initializer 'w'");
    EXPECT_CONTAINS(E, "outside the model's folder");
  }
  // A symlink inside the folder pointing out of it.
  ASSERT_FALSE(llvm::sys::fs::create_link(Outer.file("secret.bin"),
                                          Outer.file("model/link.bin")));
  std::string E = errorText(externalModel("link.bin").import({}, ModelDir));
  EXPECT_CONTAINS(E, "initializer 'w'");
  EXPECT_CONTAINS(E, "outside the model's folder");
}

TEST(TensorProto, ExternalDataSizeChecks) {
  TempDir D;
  D.write("w.bin", floatBytes({1, 2, 3}));
  EXPECT_CONTAINS(errorText(externalModel("w.bin").import({}, D.Path)),
                  "too short");
  EXPECT_CONTAINS(errorText(externalModel("w.bin", 0, 12).import({}, D.Path)),
                  "length 12");
  EXPECT_CONTAINS(errorText(externalModel("nothere.bin").import({}, D.Path)),
                  "initializer 'w'");
}

} // namespace
