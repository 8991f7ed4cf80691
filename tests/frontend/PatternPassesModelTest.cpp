//===- PatternPassesModelTest.cpp - Folding/recognition on real models ----===//
//
// batchnorm-folding, norm-recognition and gelu-recognition on the shared
// exporter output (SOLDER_SHARED_DIR/models): after the pipeline no
// BatchNormalization, decomposed LayerNorm or erf GELU remains, and the
// reference outputs equal those of the pipeline with the pass disabled.
// Lives here because it imports ONNX files (this folder links the frontend).
//
//===----------------------------------------------------------------------===//
#include "frontend/OnnxImporter.h"
#include "ir/Graph.h"
#include "passes/Pipeline.h"
#include "runtime/reference/ReferenceExecutor.h"
#include "llvm/Support/FileSystem.h"
#include "gtest/gtest.h"
#include <algorithm>
#include <cmath>
#include <map>
#include <random>

using namespace solder;

namespace {
struct ModelCase {
  const char *File;
  const char *Input; ///< input to bind to Dims, or null
  std::vector<int64_t> Dims;
  const char *Pass; ///< the pass whose effect is checked
  /// Op name -> how many the pipeline must leave.
  std::map<std::string, size_t> Counts;
};

std::unique_ptr<Graph> compile(const ModelCase &C, bool Disable) {
  std::string Path = std::string(SOLDER_SHARED_DIR) + "/models/" + C.File;
  ImportOptions IO;
  if (C.Input)
    IO.InputShapes[C.Input] = C.Dims;
  auto G = importOnnxFile(Path, IO);
  if (!G) {
    ADD_FAILURE() << C.File << ": " << llvm::toString(G.takeError());
    return nullptr;
  }
  PipelineOptions PO;
  PO.NoFusion = true; // counts ops, which fused groups would hide
  PO.VerifyEachPass = true;
  if (Disable)
    PO.DisabledPasses.push_back(C.Pass);
  if (auto E = runPipeline(**G, PO)) {
    ADD_FAILURE() << C.File << ": " << llvm::toString(std::move(E));
    return nullptr;
  }
  return std::move(*G);
}

/// Seeded inputs: floats in [-1, 1], integers 0 or 1 (valid token ids,
/// masks and types alike).
std::vector<Tensor> randomInputs(const Graph &G) {
  std::mt19937 Rng(1);
  std::uniform_real_distribution<double> Dist(-1, 1);
  std::vector<Tensor> In;
  for (Value *V : G.inputs()) {
    Tensor T(V->dtype(), V->type().staticDims());
    for (int64_t I = 0; I < T.numElements(); ++I)
      T.setDouble(I, isFloat(V->dtype()) ? Dist(Rng) : double(Rng() % 2));
    In.push_back(T);
  }
  return In;
}

size_t countOps(const Graph &G, llvm::StringRef Op) {
  return std::count_if(G.nodes().begin(), G.nodes().end(),
                       [&](const auto &N) { return N->opName() == Op; });
}

void checkModel(const ModelCase &C) {
  std::string Path = std::string(SOLDER_SHARED_DIR) + "/models/" + C.File;
  if (!llvm::sys::fs::exists(Path))
    GTEST_SKIP() << "shared model not found at " << Path;
  auto With = compile(C, false), Without = compile(C, true);
  ASSERT_TRUE(With && Without);
  for (const auto &[Op, Count] : C.Counts)
    EXPECT_EQ(countOps(*With, Op), Count) << C.File << ": " << Op;
  auto A = runReference(*With, randomInputs(*With));
  auto B = runReference(*Without, randomInputs(*Without));
  ASSERT_TRUE(bool(A)) << llvm::toString(A.takeError());
  ASSERT_TRUE(bool(B)) << llvm::toString(B.takeError());
  ASSERT_EQ(A->size(), B->size());
  for (size_t I = 0; I < A->size(); ++I) {
    const Tensor &X = (*A)[I], &Y = (*B)[I];
    ASSERT_EQ(X.dims(), Y.dims());
    // Max error relative to the output's largest magnitude: elementwise
    // relative error means nothing where outputs cross zero.
    double MaxErr = 0, MaxAbs = 0;
    for (int64_t J = 0; J < X.numElements(); ++J) {
      MaxErr = std::max(MaxErr, std::fabs(X.getDouble(J) - Y.getDouble(J)));
      MaxAbs = std::max(MaxAbs, std::fabs(Y.getDouble(J)));
    }
    EXPECT_LT(MaxErr, 1e-4 * std::max(MaxAbs, 1e-6))
        << C.File << " output " << I;
  }
}
} // namespace

TEST(PatternPassesModel, MobileNetBatchNormsFoldIntoConvs) {
  checkModel({"mobilenetv2_050_opset17.onnx",
              "input",
              {1, 3, 96, 96},
              "batchnorm-folding",
              {{"BatchNormalization", 0}, {"Conv", 52}}});
}

TEST(PatternPassesModel, BertLayerNormsBecomeOneOpEach) {
  checkModel({"bert_mini_opset14.onnx",
              "input_ids",
              {1, 16},
              "norm-recognition",
              {{"LayerNormalization", 5}, {"Sqrt", 0}, {"ReduceMean", 0}}});
}

TEST(PatternPassesModel, BertErfGelusBecomeGelu) {
  checkModel({"bert_mini_opset14.onnx",
              "input_ids",
              {1, 16},
              "gelu-recognition",
              {{"Gelu", 2}, {"Erf", 0}}});
}
