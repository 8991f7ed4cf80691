//===- PipelineTest.cpp - The whole clean-up pipeline ---------------------===//
#include "passes/Pipeline.h"
#include "PassTestUtils.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace solder;
using namespace solder::test;

// A shape sub-graph as exporters write it, over a bound batch dim.
static const char *ShapeSubgraph = R"(
graph "g" opset 17 {
  input %x : f32[4,8]
  const %zero : i64[] = [0]
  const %axes : i64[1] = [0]
  const %minus1 : i64[1] = [-1]
  %s = Shape(%x) : i64[2]
  %n = Gather(%s, %zero) {axis = 0} : i64[]
  %n1 = Unsqueeze(%n, %axes) : i64[1]
  %shape = Concat(%n1, %minus1) {axis = 0} : i64[2]
  %xi = Identity(%x) : f32[4,8]
  %y = Reshape(%xi, %shape) : f32[?,?]
  output %y
}
)";

TEST(Pipeline, FoldsShapeSubgraphsAway) {
  auto G = parseOrDie(ShapeSubgraph);
  ASSERT_TRUE(G);
  PipelineOptions Opts;
  Opts.VerifyEachPass = true;
  ASSERT_FALSE(bool(runPipeline(*G, Opts)));
  EXPECT_EQ(graphToString(*G), canonical(R"(
graph "g" opset 17 {
  input %x : f32[4,8]
  const %shape : i64[2] = [4, -1]
  %y = Reshape(%x, %shape) : f32[4,8]
  output %y
}
)"));
}

/// Levels nested Shape -> arithmetic -> Reshape steps (each Reshape's
/// target is computed from the Shape of the last Reshape's result, as
/// Swin's window attention nests them): shape-folding folds a level's
/// Shape, constant-folding its arithmetic, and only then is the next
/// level's Shape operand static: one round per level.
static std::string nestedShapes(unsigned Levels) {
  std::string T = "graph \"g\" opset 17 {\n  input %x : f32[2,3,4]\n"
                  "  const %zero : i64[3] = [0, 0, 0]\n";
  std::string Prev = "x";
  for (unsigned L = 0; L < Levels; ++L) {
    std::string N = std::to_string(L);
    T += "  %s" + N + " = Shape(%" + Prev + ") : i64[3]\n";
    T += "  %t" + N + " = Add(%s" + N + ", %zero) : i64[3]\n";
    T += "  %r" + N + " = Reshape(%" + Prev + ", %t" + N + ") : f32[?,?,?]\n";
    Prev = "r" + N;
  }
  return T + "  output %" + Prev + "\n}\n";
}

TEST(Pipeline, DeeplyNestedShapeSubgraphsFoldCompletely) {
  // 40 levels need 40 rounds of shape- and constant-folding.
  auto G = parseOrDie(nestedShapes(40));
  ASSERT_TRUE(G);
  PipelineOptions Opts;
  ASSERT_FALSE(bool(runPipeline(*G, Opts)));
  std::string After = graphToString(*G);
  EXPECT_EQ(After.find("Shape("), std::string::npos) << After;
  EXPECT_EQ(After.find("?"), std::string::npos) << After;
  ASSERT_EQ(G->outputs().size(), 1u);
  EXPECT_TRUE(G->outputs()[0]->type().isStatic());
}

TEST(Pipeline, DisabledFoldingKeepsTheSubgraph) {
  auto G = parseOrDie(ShapeSubgraph);
  ASSERT_TRUE(G);
  PipelineOptions Opts;
  Opts.DisabledPasses = {"shape-folding"};
  ASSERT_FALSE(bool(runPipeline(*G, Opts)));
  std::string After = graphToString(*G);
  EXPECT_NE(After.find("Shape("), std::string::npos);
  EXPECT_EQ(After.find("Identity("), std::string::npos);
}

TEST(Pipeline, UnknownPassNameIsAnError) {
  auto G = parseOrDie(ShapeSubgraph);
  ASSERT_TRUE(G);
  PipelineOptions Opts;
  Opts.DisabledPasses = {"no-such-pass"};
  llvm::Error E = runPipeline(*G, Opts);
  ASSERT_TRUE(bool(E));
  EXPECT_NE(llvm::toString(std::move(E)).find("no-such-pass"),
            std::string::npos);
}

TEST(Pipeline, DumpsNumberedFilesAfterEachPass) {
  llvm::SmallString<128> Dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("solder-dump", Dir));
  auto G = parseOrDie(ShapeSubgraph);
  ASSERT_TRUE(G);
  PipelineOptions Opts;
  Opts.DumpAfterAllDir = std::string(Dir);
  ASSERT_FALSE(bool(runPipeline(*G, Opts)));
  for (const char *F : {"00-input.ir", "01-identity-elimination.ir",
                        "02-shape-folding.ir", "03-constant-folding.ir"})
    EXPECT_TRUE(llvm::sys::fs::exists(Dir + "/" + F)) << F;
  llvm::sys::fs::remove_directories(Dir);
}

TEST(Pipeline, PassTimesComeOncePerPassInRunOrder) {
  // Each pass that ran has one entry (fixpoint rounds summed), in the
  // order the passes first ran, which is pipelinePassNames()'s; a disabled
  // pass has none.
  auto G = parseOrDie(ShapeSubgraph);
  ASSERT_TRUE(G);
  PipelineOptions Opts;
  Opts.DisabledPasses = {"constant-folding"};
  std::vector<std::pair<std::string, double>> Times;
  Opts.PassSeconds = &Times;
  ASSERT_FALSE(bool(runPipeline(*G, Opts)));
  ASSERT_FALSE(Times.empty());
  std::vector<std::string> Names = pipelinePassNames();
  size_t Last = 0;
  for (size_t I = 0; I < Times.size(); ++I) {
    EXPECT_GE(Times[I].second, 0.0) << Times[I].first;
    EXPECT_NE(Times[I].first, "constant-folding");
    auto It = llvm::find(Names, Times[I].first);
    ASSERT_NE(It, Names.end()) << Times[I].first;
    size_t At = size_t(It - Names.begin());
    if (I) {
      EXPECT_GT(At, Last) << Times[I].first << " twice or out of order";
    }
    Last = At;
  }
  EXPECT_EQ(Times.front().first, "identity-elimination");
}

TEST(Pipeline, PassNamesAreInPipelineOrder) {
  std::vector<std::string> Expected = {"identity-elimination",
                                       "shape-folding",
                                       "constant-folding",
                                       "dead-code-elimination",
                                       "norm-recognition",
                                       "gelu-recognition",
                                       "batchnorm-folding",
                                       "conv-pad-legalization",
                                       "matmul-broadcast-legalization",
                                       "precision-conversion",
                                       "conv-layout",
                                       "attention-recognition",
                                       "attention-mask-floor",
                                       "horizontal-matmul-fusion",
                                       "norm-deferral",
                                       "epilogue-fusion",
                                       "loop-fusion",
                                       "norm-epilogue-fusion"};
  EXPECT_EQ(pipelinePassNames(), Expected);
}
