//===- CompileAllTest.cpp - NVRTC compiles every kernel we can emit -------===//
//
// Emits and compiles (for sm_90, with NVRTC: no GPU needed) every kernel of
// every shared model and of every ONNX node test whose graph solder
// imports. A compile error anywhere fails the test with NVRTC's log. CUBINs
// are cached in the build tree, so reruns take seconds. Skipped where
// ../shared is absent.
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelEmitter.h"
#include "codegen/NvrtcCompiler.h"
#include "frontend/OnnxImporter.h"
#include "ir/OpRegistry.h"
#include "passes/Pipeline.h"
#include "tests/codegen/TestNvrtc.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <algorithm>
#include <chrono>
#include <gtest/gtest.h>
#include <map>

using namespace solder;

namespace {

using solder::testing::testNvrtcOptions;

std::string sharedDir() { return SOLDER_SHARED_DIR; }

/// Imports and runs the pipeline. With BindDir, integer and scalar graph
/// inputs (the shapes, pads, sizes and Range bounds node tests pass as
/// data) become constants holding BindDir/input_<k>.pb, so the results
/// depending on them get static shapes.
llvm::Expected<std::unique_ptr<Graph>>
importAndLower(const std::string &Path, const ImportOptions &IO,
               const std::string &BindDir = "") {
  auto G = importOnnxFile(Path, IO);
  if (!G)
    return G.takeError();
  if (!BindDir.empty()) {
    std::vector<Value *> Inputs((*G)->inputs().begin(), (*G)->inputs().end());
    for (size_t K = 0; K < Inputs.size(); ++K) {
      Value *In = Inputs[K];
      // Resize's roi and scales are float vectors that decide its taps.
      bool ResizeParam = llvm::any_of(In->uses(), [](const Use &U) {
        return U.User->kind() == OpKind::Resize && U.OperandIndex > 0;
      });
      if (In->dtype() != DType::I64 && In->dtype() != DType::I32 &&
          In->type().rank() != 0 && !ResizeParam)
        continue;
      auto T =
          readTensorProtoFile(BindDir + "/input_" + std::to_string(K) + ".pb");
      if (!T)
        return T.takeError();
      Value *C = (*G)->addConstant(In->name() + "_bound", std::move(*T));
      (*G)->replaceAllUsesWith(In, C);
    }
    if (auto E = inferGraphTypes(**G))
      return E;
  }
  PipelineOptions PO;
  if (auto E = runPipeline(**G, PO))
    return E;
  return G;
}

struct ModelCase {
  const char *File;
  std::map<std::string, std::vector<int64_t>> Shapes;
};

TEST(CodegenCompileAll, SharedModels) {
  std::string Dir = sharedDir() + "/models";
  if (!llvm::sys::fs::exists(Dir))
    GTEST_SKIP() << "shared models not found at " << Dir;
  const ModelCase Cases[] = {
      {"mobilenetv2_050_opset17.onnx", {{"input", {2, 3, 96, 96}}}},
      {"resnet10_dynamo.onnx", {}},
      {"squeezenet11_opset13.onnx", {}},
      {"bert_mini_opset14.onnx",
       {{"input_ids", {2, 16}}, {"attention_mask", {2, 16}}}},
      {"bert_mini_dynamo.onnx", {}},
  };
  unsigned Present = 0, Lowered = 0;
  for (const ModelCase &C : Cases) {
    std::string Path = Dir + "/" + C.File;
    if (!llvm::sys::fs::exists(Path))
      continue;
    ++Present;
    ImportOptions IO;
    for (auto &S : C.Shapes)
      IO.InputShapes[S.first] = S.second;
    auto G = importAndLower(Path, IO);
    if (!G) {
      // Import is the frontend's to fix (its tests cover these models).
      std::printf("  %-32s not imported: %s\n", C.File,
                  llvm::toString(G.takeError()).c_str());
      continue;
    }
    ++Lowered;
    auto Kernels = emitGraphKernels(**G);
    ASSERT_TRUE(bool(Kernels))
        << C.File << ": " << llvm::toString(Kernels.takeError());
    EXPECT_FALSE(Kernels->empty()) << C.File;
    CompileStats Stats;
    auto Cubins = compileKernels(*Kernels, testNvrtcOptions(), &Stats);
    ASSERT_TRUE(bool(Cubins))
        << C.File << ": " << llvm::toString(Cubins.takeError());
    ASSERT_EQ(Cubins->size(), Kernels->size());
    for (const std::string &Cubin : *Cubins)
      EXPECT_EQ(Cubin.substr(0, 4), "\x7f"
                                    "ELF")
          << C.File;
    std::printf("  %-32s %3zu kernels (%u compiled, %u cached) in %.2f s\n",
                C.File, Kernels->size(), Stats.Compiled, Stats.Cached,
                Stats.Seconds);
  }
  // Every model but one (awaiting a frontend op) must get through.
  EXPECT_GE(Lowered + 1, Present);
}

TEST(CodegenCompileAll, OnnxNodeTests) {
  std::string Dir = sharedDir() + "/onnx-tests/node";
  if (!llvm::sys::fs::exists(Dir))
    GTEST_SKIP() << "ONNX node tests not found at " << Dir;
  std::vector<std::string> Tests;
  std::error_code EC;
  for (llvm::sys::fs::directory_iterator It(Dir, EC), End; It != End && !EC;
       It.increment(EC))
    if (llvm::sys::fs::exists(It->path() + "/model.onnx"))
      Tests.push_back(It->path());
  std::sort(Tests.begin(), Tests.end());

  std::vector<GeneratedKernel> All;
  std::vector<std::unique_ptr<Graph>> Graphs; // the kernels point into them
  unsigned Imported = 0, WithKernels = 0;
  std::vector<std::string> Refused;
  for (const std::string &T : Tests) {
    std::string Name = llvm::sys::path::filename(T).str();
    auto G = importAndLower(T + "/model.onnx", {});
    if (!G) {
      // Not supported by the frontend or passes: their own tests cover it.
      llvm::consumeError(G.takeError());
      continue;
    }
    ++Imported;
    auto Kernels = emitGraphKernels(**G);
    // Shapes that depend on input data (a Pad's pads, a Range's limits
    // given as inputs) or operands the kernel bakes (CumSum's axis,
    // Trilu's k): retry with those inputs bound to the test's data.
    if (!Kernels) {
      std::string Msg = llvm::toString(Kernels.takeError());
      if (Msg.find("static shapes") != std::string::npos ||
          Msg.find("must be a constant") != std::string::npos) {
        auto GB = importAndLower(T + "/model.onnx", {}, T + "/test_data_set_0");
        ASSERT_TRUE(bool(GB)) << Name << ": " << llvm::toString(GB.takeError());
        G = std::move(GB);
        Kernels = emitGraphKernels(**G);
      } else {
        Kernels = makeError(Msg);
      }
    }
    if (!Kernels) {
      std::string Msg = llvm::toString(Kernels.takeError());
      // An op/dtype combination code generation declines is listed; any
      // other emitter error is a bug.
      EXPECT_NE(Msg.find("does not support"), std::string::npos)
          << Name << ": " << Msg;
      Refused.push_back(Name + ": " + Msg);
      continue;
    }
    if (!Kernels->empty())
      ++WithKernels;
    for (GeneratedKernel &K : *Kernels)
      All.push_back(std::move(K));
    Graphs.push_back(std::move(*G));
  }
  CompileStats Stats;
  auto Cubins = compileKernels(All, testNvrtcOptions(), &Stats);
  ASSERT_TRUE(bool(Cubins)) << llvm::toString(Cubins.takeError());
  std::printf("  %u node tests imported, %u with kernels, %zu kernels "
              "(%u compiled, %u cached) in %.2f s\n",
              Imported, WithKernels, All.size(), Stats.Compiled, Stats.Cached,
              Stats.Seconds);
  for (const std::string &R : Refused)
    std::printf("  declined: %s\n", R.c_str());
  EXPECT_GT(WithKernels, 100u);
}

} // namespace
