//===- PlanBuilder.h - From a compiled Graph to a Plan ----------*- C++ -*-===//
//
// Turns a graph that went through the pass pipeline into a Plan: orders the
// steps (generated kernels, cuBLASLt and cuDNN calls, copies), aliases views
// to their operands, places intermediates in the arena, packs the weights,
// and compiles every kernel with NVRTC for one architecture. Runs on any
// machine: nothing here touches a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_RUNTIME_CUDA_PLANBUILDER_H
#define SOLDER_RUNTIME_CUDA_PLANBUILDER_H

#include "ir/Graph.h"
#include "runtime/cuda/Plan.h"
#include "llvm/Support/Error.h"
#include <map>
#include <set>
#include <string>

namespace llvm {
class raw_ostream;
}

namespace solder {

struct PlanOptions {
  /// "sm_90"; must be set.
  std::string Arch;
  /// Where compiled cubins are cached; empty = the default cache folder
  /// ($XDG_CACHE_HOME/solder, else ~/.cache/solder).
  std::string CacheDir;
  /// Lets fp32 matmuls and convolutions use TF32 tensor cores.
  bool AllowTF32 = false;
  /// What the graph was converted to (recorded in the plan).
  Precision Prec = Precision::F32;
  /// Progress lines for long steps; null = quiet.
  llvm::raw_ostream *Progress = nullptr;
  /// Test only: the generated kernel of this fused group perturbs its
  /// output (CodegenOptions::PerturbGroupId); -1 = off.
  int64_t PerturbGroupId = -1;
  /// Who runs matmul contraction groups (ir/DType.h), and what tuning
  /// chose per group id (true: the generated GEMM) with its note for the
  /// fusion report ("tuned: generated 10.1 us, library 14.2 us").
  GemmKernels Gemm = GemmKernels::Auto;
  std::map<int64_t, bool> GemmChoices;
  std::map<int64_t, std::string> GemmNotes;
  /// Of the generated ones, groups with a row normalization that run
  /// split: the GEMM up to the normalization's input, then a row kernel
  /// (CodegenOptions::SplitNormGroups).
  std::set<int64_t> SplitNormGroups;
  /// Who runs attention groups, what tuning chose per group id (true:
  /// cuDNN) and its note.
  AttentionKernels Attention = AttentionKernels::Auto;
  std::map<int64_t, bool> AttentionChoices;
  std::map<int64_t, std::string> AttentionNotes;
  /// How convolution groups run, what tuning chose per group id (true:
  /// the cuDNN graph) and its note.
  ConvEpilogues Conv = ConvEpilogues::Auto;
  std::map<int64_t, bool> ConvGraphChoices;
  std::map<int64_t, std::string> ConvGraphNotes;
  /// Per group id, ConvConfig::GraphEngine (absent: -1).
  std::map<int64_t, int> ConvGraphEngines;
  /// Generated kernels launch as programmatic dependents (sm_90+;
  /// CodegenOptions::DependentLaunch). Experimental, off by default.
  bool DependentLaunch = false;
  /// CodegenOptions::ShapeParams: set for a dynamic model's variants.
  bool ShapeParams = false;
};

/// The contraction groups of G that run as generated GEMMs under Opts.
std::set<int64_t> generatedGemmGroups(const Graph &G, const PlanOptions &Opts);

/// The contraction groups of G that run as one cuDNN convolution graph
/// under Opts (codegen/ConvGraphEpilogue.h).
std::set<int64_t> convGraphGroups(const Graph &G, const PlanOptions &Opts);

/// Builds the plan of G (every value must have a static shape) without
/// compiling its kernels.
llvm::Expected<Plan> buildPlan(const Graph &G, const PlanOptions &Opts);

/// Compiles every kernel of P whose cubin is missing (or all of them, when
/// Arch differs from P.Arch) for Opts.Arch, in parallel, through the disk
/// cache.
llvm::Error compilePlanKernels(Plan &P, const PlanOptions &Opts);

} // namespace solder

#endif
