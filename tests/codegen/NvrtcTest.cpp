//===- NvrtcTest.cpp - NVRTC compilation and the CUBIN cache --------------===//
#include "codegen/KernelEmitter.h"
#include "codegen/NvrtcCompiler.h"
#include "codegen/NvrtcIdentity.h"
#include "ir/Parser.h"
#include "tests/TestFiles.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <gtest/gtest.h>

using namespace solder;
using solder::testing::filesIn;
using solder::testing::TempDir;

namespace {

GeneratedKernel handWritten(const std::string &Body) {
  GeneratedKernel K;
  K.Name = "solder_test_kernel";
  K.Summary = "test";
  K.Source = "extern \"C\" __global__ void solder_test_kernel(float *out) {\n" +
             Body + "\n}\n";
  return K;
}

TEST(Nvrtc, OptionsNameTheArchAndStandard) {
  NvrtcOptions O;
  O.Arch = "sm_90";
  auto Opts = nvrtcCompileOptions(O);
  ASSERT_TRUE(bool(Opts)) << llvm::toString(Opts.takeError());
  EXPECT_EQ((*Opts)[0], "--gpu-architecture=sm_90");
  EXPECT_EQ((*Opts)[1], "--std=c++17");
  O.Arch = "sm_70";
  auto Bad = nvrtcCompileOptions(O);
  ASSERT_FALSE(bool(Bad));
  EXPECT_NE(llvm::toString(Bad.takeError()).find("sm_80 or newer"),
            std::string::npos);
  EXPECT_NE(nvrtcVersionString(), "unknown");
}

TEST(Nvrtc, CompilesAndCaches) {
  TempDir Cache("solder-nvrtc");
  NvrtcOptions O;
  O.CacheDir = std::string(Cache.Path.str());
  std::vector<GeneratedKernel> K = {handWritten("out[threadIdx.x] = 1.f;"),
                                    handWritten("out[threadIdx.x] = 2.f;"),
                                    handWritten("out[threadIdx.x] = 1.f;")};
  CompileStats S1;
  auto C1 = compileKernels(K, O, &S1);
  ASSERT_TRUE(bool(C1)) << llvm::toString(C1.takeError());
  ASSERT_EQ(C1->size(), 3u);
  EXPECT_EQ((*C1)[0].substr(0, 4), "\x7f"
                                   "ELF");
  EXPECT_EQ((*C1)[0], (*C1)[2]); // identical kernels compile once
  EXPECT_NE((*C1)[0], (*C1)[1]);
  EXPECT_EQ(S1.Compiled, 2u);
  EXPECT_EQ(S1.Cached, 0u);
  // Two cache files and NVRTC's identity record, no temporaries left
  // behind.
  std::vector<std::string> Files = filesIn(Cache.Path);
  EXPECT_EQ(Files.size(), 3u);
  llvm::erase_if(Files, [](const std::string &F) {
    return F == NvrtcIdentityFile;
  });
  EXPECT_EQ(Files.size(), 2u);
  for (const std::string &F : Files)
    EXPECT_EQ(llvm::StringRef(F).endswith(".cubin"), true) << F;

  CompileStats S2;
  auto C2 = compileKernels(K, O, &S2);
  ASSERT_TRUE(bool(C2)) << llvm::toString(C2.takeError());
  EXPECT_EQ(S2.Compiled, 0u);
  EXPECT_EQ(S2.Cached, 2u);
  EXPECT_EQ(*C1, *C2);

  // A corrupt cache entry is recompiled, not returned.
  for (const std::string &F : Files) {
    std::error_code EC;
    llvm::raw_fd_ostream OS((Cache.Path + "/" + F).str(), EC);
    OS << "garbage";
  }
  CompileStats S3;
  auto C3 = compileKernels(K, O, &S3);
  ASSERT_TRUE(bool(C3)) << llvm::toString(C3.takeError());
  EXPECT_EQ(S3.Compiled, 2u);
  EXPECT_EQ(*C1, *C3);
}

TEST(Nvrtc, ProgressIsReported) {
  NvrtcOptions O;
  O.UseCache = false;
  unsigned Last = 0, Calls = 0, Total = 0;
  O.Progress = [&](unsigned Done, unsigned N) {
    ++Calls;
    EXPECT_GT(Done, Last);
    Last = Done;
    Total = N;
  };
  std::vector<GeneratedKernel> K = {handWritten("out[0] = 1.f;"),
                                    handWritten("out[0] = 3.f;")};
  auto C = compileKernels(K, O);
  ASSERT_TRUE(bool(C)) << llvm::toString(C.takeError());
  EXPECT_EQ(Calls, 2u);
  EXPECT_EQ(Last, 2u);
  EXPECT_EQ(Total, 2u);
}

TEST(Nvrtc, CompileErrorCarriesLogAndSource) {
  TempDir Fail("solder-nvrtc");
  NvrtcOptions O;
  O.UseCache = false;
  O.FailureDir = std::string(Fail.Path.str());
  std::vector<GeneratedKernel> K = {handWritten("out[0] = 1.f;"),
                                    handWritten("out[0] = undeclared_thing;")};
  auto C = compileKernels(K, O);
  ASSERT_FALSE(bool(C));
  std::string Msg = llvm::toString(C.takeError());
  EXPECT_NE(Msg.find("solder_test_kernel"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("undeclared_thing"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find(Fail.Path.str().str()), std::string::npos) << Msg;
  std::vector<std::string> Files = filesIn(Fail.Path);
  ASSERT_EQ(Files.size(), 1u);
  EXPECT_TRUE(llvm::StringRef(Files[0]).endswith(".cu"));
}

TEST(Nvrtc, EmittedKernelsOfEveryFamilyCompile) {
  auto G = parseGraph(R"(graph "g" opset 21 {
  input %x : f16[2,4,6,6]
  input %w : f32[6]
  input %idx : i64[3]
  const %axes : i64[2] = [2, 3]
  const %pads : i64[8] = [0, 0, 1, 1, 0, 0, 1, 1]
  %a = Gelu(%x) {approximate = "tanh"}
  %b = ReduceMean(%a, %axes)
  %c = Softmax(%a) {axis = 1}
  %d = MaxPool(%a) {kernel_shape = [3, 3], strides = [1, 1]}
  %e = Pad(%a, %pads) {mode = "reflect"}
  %f = LayerNormalization(%x, %w) {axis = -1}
  %g = Gather(%w, %idx)
  %h = Cast(%g) {to = 10}
  %t = Transpose(%a) {perm = [0, 2, 3, 1]}
  output %b
  output %c
  output %d
  output %e
  output %f
  output %h
  output %t
}
)");
  ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
  auto K = emitGraphKernels(**G);
  ASSERT_TRUE(bool(K)) << llvm::toString(K.takeError());
  EXPECT_EQ(K->size(), 9u);
  TempDir Cache("solder-nvrtc");
  NvrtcOptions O;
  O.CacheDir = std::string(Cache.Path.str());
  auto C = compileKernels(*K, O);
  ASSERT_TRUE(bool(C)) << llvm::toString(C.takeError());
}

} // namespace
