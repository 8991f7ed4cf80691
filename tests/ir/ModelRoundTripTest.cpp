//===- ModelRoundTripTest.cpp - Real models through print -> parse
//---------===//
//
// Imports every model in SOLDER_SHARED_DIR/models, prints it with full
// constants, parses the text back (with verification) and checks the
// second print is byte-identical and every constant bit-exact. Skipped
// where ../shared is absent.
//
//===----------------------------------------------------------------------===//
#include "frontend/OnnxImporter.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <algorithm>
#include <cctype>
#include <gtest/gtest.h>

using namespace solder;

namespace {

std::vector<std::string> modelFiles() {
  std::vector<std::string> Files;
  llvm::SmallString<256> Dir(SOLDER_SHARED_DIR);
  llvm::sys::path::append(Dir, "models");
  std::error_code EC;
  for (llvm::sys::fs::directory_iterator It(Dir, EC), End; It != End && !EC;
       It.increment(EC))
    if (llvm::sys::path::extension(It->path()) == ".onnx")
      Files.push_back(It->path());
  std::sort(Files.begin(), Files.end());
  return Files;
}

class ModelRoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelRoundTripTest, PrintParsePrintIsIdentical) {
  const std::string &File = GetParam();
  if (File.empty())
    GTEST_SKIP() << "no models under " SOLDER_SHARED_DIR "/models";
  auto G = importOnnxFile(File);
  // Import failures are the frontend's to fix (its own tests cover them);
  // this test is about the textual form of whatever imports.
  if (!G)
    GTEST_SKIP() << "cannot import " << File << ": "
                 << llvm::toString(G.takeError());
  if (llvm::Error E = verifyGraph(**G))
    ADD_FAILURE() << "imported graph does not verify: "
                  << llvm::toString(std::move(E));
  std::string Text = graphToString(**G);
  auto P = parseGraph(Text);
  ASSERT_TRUE(bool(P)) << llvm::toString(P.takeError());
  EXPECT_TRUE(graphToString(**P) == Text) << "second print differs";
  ASSERT_EQ((*P)->constants().size(), (*G)->constants().size());
  for (size_t I = 0; I < (*G)->constants().size(); ++I)
    EXPECT_TRUE((*P)->constants()[I]->constant()->bitwiseEqual(
        *(*G)->constants()[I]->constant()))
        << (*G)->constants()[I]->name();
  EXPECT_EQ((*P)->nodes().size(), (*G)->nodes().size());
  EXPECT_EQ((*P)->inputs().size(), (*G)->inputs().size());
  EXPECT_EQ((*P)->outputs().size(), (*G)->outputs().size());
  // The elided form is for reading: shorter, and refused by the parser
  // when anything was elided.
  PrintOptions Elide;
  Elide.ElideLargeConstants = true;
  std::string Short = graphToString(**G, Elide);
  EXPECT_LE(Short.size(), Text.size());
  if (Short.find("= elided") != std::string::npos) {
    EXPECT_FALSE(bool(parseGraph(Short)));
  }
}

std::vector<std::string> modelsOrPlaceholder() {
  std::vector<std::string> Files = modelFiles();
  if (Files.empty())
    Files.push_back(""); // one instance that skips with a message
  return Files;
}

INSTANTIATE_TEST_SUITE_P(SharedModels, ModelRoundTripTest,
                         ::testing::ValuesIn(modelsOrPlaceholder()),
                         [](const ::testing::TestParamInfo<std::string> &Info) {
                           std::string Name =
                               Info.param.empty()
                                   ? std::string("none")
                                   : llvm::sys::path::stem(Info.param).str();
                           for (char &C : Name)
                             if (!isalnum(static_cast<unsigned char>(C)))
                               C = '_';
                           return Name;
                         });

} // namespace
