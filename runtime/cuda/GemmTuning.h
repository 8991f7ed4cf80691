//===- GemmTuning.h - Generated GEMM or library, timed per group -*- C++
//-*-===//
//
// A matmul contraction group can run as the library call plus a rest
// kernel, or as one generated tensor-core GEMM (codegen/GemmEmitter.cpp).
// Which is faster depends on the shape and the GPU, so with
// CompileOptions::Tune both are timed on this GPU: the graph is built into
// a library plan and an all-generated plan, each group's steps are timed
// alone in each (a CUDA graph of just those steps, replayed back to back:
// ExecutionContext::timeStepRanges), and the faster is recorded per group
// id in PlanOptions::GemmChoices, with both times in GemmNotes for the
// fusion report. A group timed alone keeps its weights in L2 between
// replays, which flatters small tiles that read them many times, so the
// generated kernel must win by 2%, and the plan with the chosen ones must
// then also beat the library plan as a whole, else none is kept (the note
// says so). Inputs are zeros (valid indices for embedding lookups; the
// timings do not depend on the values). The outcome is cached on disk
// beside the compiled kernels (<cache>/tuning/<sha256 of the graph's IR
// text, both plans' kernels, the GPU's name and NVRTC's version>), so a
// second compile of the same model on the same GPU model times nothing.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_RUNTIME_CUDA_GEMMTUNING_H
#define SOLDER_RUNTIME_CUDA_GEMMTUNING_H

#include "ir/Graph.h"
#include "runtime/cuda/PlanBuilder.h"
#include "llvm/Support/Error.h"

namespace solder {

/// Fills Opts.GemmChoices and Opts.GemmNotes for every group of G that has
/// a generated GEMM; needs a GPU.
llvm::Error tuneGemmGroups(const Graph &G, PlanOptions &Opts);

/// Fills Opts.AttentionChoices and Opts.AttentionNotes for every attention
/// group cuDNN's fused attention takes, timed the same way (cuDNN must win
/// by 5%, and the plan with the chosen calls must be faster whole); needs
/// a GPU.
llvm::Error tuneAttentionGroups(const Graph &G, PlanOptions &Opts);

/// Fills Opts.ConvGraphChoices and Opts.ConvGraphNotes for every
/// convolution group that lowers to a cuDNN operation graph
/// (codegen/ConvGraphEpilogue.h) and for which cuDNN has an engine on this
/// GPU, timed against cuDNN's fused call plus the rest kernel the same way
/// (the graph must win by 2%, and the plan with the chosen graphs must be
/// faster whole); needs a GPU.
llvm::Error tuneConvGroups(const Graph &G, PlanOptions &Opts);

} // namespace solder

#endif
