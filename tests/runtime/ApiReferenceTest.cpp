//===- ApiReferenceTest.cpp - The public API's reference backend and phases
//===//
//
// Needs no GPU: a model compiled through include/solder/Solder.h for
// ExecutionBackend::Reference runs on the CPU through runHost and matches
// the reference executor on the same graph; the GPU-only calls refuse it
// with a message; compiling reports its phases in order.
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestUtils.h"
#include "runtime/reference/ReferenceExecutor.h"
#include "solder/Solder.h"
#include "llvm/Support/Error.h"
#include <string>
#include <vector>

using namespace solder;
using namespace solder::test;

namespace {

std::unique_ptr<Graph> mixedGraph() { return parseOrFail(mixedGraphText()); }

Tensor ramp(const TensorInfo &T, double Scale) {
  Tensor X(T.Elem, T.Dims);
  for (int64_t K = 0; K < X.numElements(); ++K)
    X.mutableData<float>()[K] = float(Scale * double(K % 7) - 0.3);
  return X;
}

std::string errorText(llvm::Error E) {
  return E ? llvm::toString(std::move(E)) : "no error";
}

TEST(ApiReferenceTest, RunsOnTheCpuAndMatchesTheExecutor) {
  CompileOptions Opts;
  Opts.Backend = ExecutionBackend::Reference;
  auto M = CompiledModel::compileGraph(mixedGraph(), Opts);
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  EXPECT_EQ((*M)->backend(), ExecutionBackend::Reference);
  ASSERT_EQ((*M)->inputs().size(), 2u);
  EXPECT_EQ((*M)->inputs()[1].Name, "img");
  EXPECT_EQ((*M)->inputs()[1].Dims, (std::vector<int64_t>{1, 2, 5, 5}));
  ASSERT_EQ((*M)->outputs().size(), 2u);
  EXPECT_EQ((*M)->outputs()[1].Dims, (std::vector<int64_t>{1, 75}));

  auto Ctx = (*M)->createContext();
  ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
  EXPECT_EQ((*Ctx)->device(), -1);
  std::vector<Tensor> In = {ramp((*M)->inputs()[0], 0.25),
                            ramp((*M)->inputs()[1], 0.5)};
  auto Out = (*Ctx)->runHost(In);
  ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
  auto Want = runReference(*mixedGraph(), In);
  ASSERT_TRUE(bool(Want)) << llvm::toString(Want.takeError());
  ASSERT_EQ(Out->size(), Want->size());
  for (size_t K = 0; K < Out->size(); ++K) {
    ASSERT_EQ((*Out)[K].dims(), (*Want)[K].dims());
    for (int64_t E = 0; E < (*Out)[K].numElements(); ++E)
      EXPECT_NEAR((*Out)[K].data<float>()[E], (*Want)[K].data<float>()[E], 1e-5)
          << "output " << K << " element " << E;
  }
}

TEST(ApiReferenceTest, RefusesGpuOnlyCallsAndBadInputs) {
  CompileOptions Opts;
  Opts.Backend = ExecutionBackend::Reference;
  auto M = CompiledModel::compileGraph(mixedGraph(), Opts);
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  EXPECT_NE(
      errorText((*M)->savePlan("/tmp/never-written.plan")).find("no plan"),
      std::string::npos);
  auto Ctx = (*M)->createContext();
  ASSERT_TRUE(bool(Ctx));
  float Dummy[4] __attribute__((aligned(16)));
  EXPECT_NE(errorText((*Ctx)->bindInput(0, Dummy))
                .find("bindInput needs "
                      "the cuda backend"),
            std::string::npos);
  EXPECT_NE(errorText((*Ctx)->run(nullptr)).find("needs the cuda backend"),
            std::string::npos);

  // The wrong shape for input 'x' names it and both types.
  std::vector<Tensor> In = {Tensor(DType::F32, {3, 8}),
                            ramp((*M)->inputs()[1], 1.0)};
  auto Out = (*Ctx)->runHost(In);
  ASSERT_FALSE(bool(Out));
  std::string Msg = llvm::toString(Out.takeError());
  EXPECT_NE(Msg.find("input 'x': got f32[3,8], the model takes f32[2,8]"),
            std::string::npos)
      << Msg;
  auto Short = (*Ctx)->runHost({In[1]});
  ASSERT_FALSE(bool(Short));
  EXPECT_NE(llvm::toString(Short.takeError()).find("takes 2 inputs, got 1"),
            std::string::npos);

  // compileGraph(Graph &) cannot keep a borrowed graph for the executor.
  auto G = mixedGraph();
  auto Borrowed = CompiledModel::compileGraph(*G, Opts);
  ASSERT_FALSE(bool(Borrowed));
  EXPECT_NE(llvm::toString(Borrowed.takeError()).find("std::unique_ptr"),
            std::string::npos);
}

TEST(ApiReferenceTest, UnboundSymbolicInputIsAnError) {
  auto G = parseOrFail(R"(graph "sym" opset 17 {
  input %x : f32[N,4]
  %y = Relu(%x) : f32[N,4] @"relu"
  output %y
})");
  ASSERT_TRUE(G);
  CompileOptions Opts;
  Opts.Backend = ExecutionBackend::Reference;
  auto M = CompiledModel::compileGraph(std::move(G), Opts);
  ASSERT_FALSE(bool(M));
  std::string Msg = llvm::toString(M.takeError());
  EXPECT_NE(Msg.find("input 'x' has no static shape (f32[N,4])"),
            std::string::npos)
      << Msg;
}

TEST(ApiReferenceTest, ReportsCompilePhasesInOrder) {
  std::vector<std::string> Seen;
  CompileOptions Opts;
  Opts.Backend = ExecutionBackend::Reference;
  Opts.OnPhase = [&](llvm::StringRef Phase, bool Done) {
    Seen.push_back((Done ? "end " : "begin ") + Phase.str());
  };
  ASSERT_TRUE(bool(CompiledModel::compileGraph(mixedGraph(), Opts)));
  EXPECT_EQ(Seen, (std::vector<std::string>{"begin passes", "end passes"}));

  // The GPU plan compiles without a GPU (NVRTC only).
  Seen.clear();
  Opts.Backend = ExecutionBackend::Cuda;
  Opts.Arch = "sm_90";
  auto M = CompiledModel::compileGraph(mixedGraph(), Opts);
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  EXPECT_EQ(Seen, (std::vector<std::string>{"begin passes", "end passes",
                                            "begin plan", "end plan",
                                            "begin kernels", "end kernels"}));
}

} // namespace
