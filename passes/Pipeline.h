//===- Pipeline.h - The ordered pass pipeline -------------------*- C++ -*-===//
#ifndef SOLDER_PASSES_PIPELINE_H
#define SOLDER_PASSES_PIPELINE_H

#include "ir/SizeLimits.h"
#include "passes/Pass.h"
#include <memory>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace solder {

class ReducedWeightCache;

/// Every knob of the pipeline, in one typed struct.
struct PipelineOptions {
  /// Pass names (Pass::name()) to skip.
  std::vector<std::string> DisabledPasses;
  /// When non-empty, the IR is written after each pass into this folder as
  /// numbered files: 00-input.ir, 01-<pass>.ir, ...
  std::string DumpAfterAllDir;
  /// Run the verifier after every pass (default on in debug builds).
#ifdef NDEBUG
  bool VerifyEachPass = false;
#else
  bool VerifyEachPass = true;
#endif
  /// Where pass decisions are printed; null = quiet.
  llvm::raw_ostream *DebugStream = nullptr;
  /// Compiling for the GPU: adds the passes that shape the graph for the
  /// library calls (conv-pad-legalization).
  bool TargetGpu = false;
  /// Fusion (issue 7): NoFusion skips every fusion pass (batchnorm folding
  /// and pattern recognition still run: they change no step structure).
  bool NoFusion = false;
  /// attention-recognition runs (with fusion): scaled dot-product
  /// attention sub-graphs become Attention nodes (`--fuse-attention`).
  bool FuseAttention = false;
  /// Without FuseAttention: fp16/bf16 plans for the GPU fuse attention
  /// where it is measured faster, i.e. where its kernel's grid has at
  /// least AutoAttentionMinBlocks blocks of 64 query rows, B*H*ceil(Sq/64),
  /// or at most AutoAttentionShortKeys keys (H100, BERT-base: 17-20% faster
  /// at 8x256 and 32x512, faster at 1x128, 2x256 and 4x128 too, 45% slower
  /// at 1x512 = 96 blocks of 512 keys; bench/RESULTS.md).
  /// With Attention == Cudnn every attention is fused (the thresholds
  /// are the generated kernel's). `--no-fuse-attention` clears it.
  bool AutoAttention = true;
  /// norm-deferral runs (f16/bf16 GPU plans, with fusion): LayerNorms whose
  /// users are matmuls and residual adds hand those users their input and
  /// row statistics instead (`--defer-norms`; passes/NormDeferral.h).
  bool DeferNorms = false;
  /// `--gemm-kernels`: not read by any pass; carried to the GPU plan
  /// builder (PlanOptions::Gemm) by the tools that build plans from a
  /// pipeline run (test-onnx, run on the cuda backend).
  GemmKernels Gemm = GemmKernels::Auto;
  /// `--attention-kernels`: likewise carried to PlanOptions::Attention.
  AttentionKernels Attention = AttentionKernels::Auto;
  /// `--conv-epilogues`: likewise carried to PlanOptions::Conv.
  ConvEpilogues Conv = ConvEpilogues::Auto;
  /// Fusion instances not to form: a group id ("7"): that group is not
  /// formed and its members run unfused; an ONNX node name: that node is
  /// kept out of every group.
  std::vector<std::string> DisabledFusions;
  /// When set, each pass's wall time is added here (seconds, summed over
  /// fixpoint rounds), in the order the passes first ran.
  std::vector<std::pair<std::string, double>> *PassSeconds = nullptr;
  /// When set, every decision of every pass is appended here (with the
  /// pass name) for the fusion report.
  std::vector<DecisionRecord> *Decisions = nullptr;
  /// fp16/bf16: precision-conversion rewrites the float tensors; the
  /// model's fp32 inputs and outputs keep their type when KeepModelIo.
  Precision Prec = Precision::F32;
  bool KeepModelIo = true;
  /// When set, precision-conversion keeps the weights it converts there,
  /// and horizontal-matmul-fusion the weights it packs, for later compiles
  /// of the same model file (shape variants).
  ReducedWeightCache *ReducedWeights = nullptr;
  /// Which 2-D convolutions conv-layout puts in NHWC (ir/DType.h).
  ConvLayout Layout = ConvLayout::Auto;
  /// Constant folding does not materialize results larger than this
  /// (bytes, `--max-constant-bytes`), so a folded broadcast cannot blow up
  /// the weights: such a node is left unfolded.
  size_t MaxFoldedConstantBytes = DefaultMaxConstantBytes;
  /// A value whose static size is above this (bytes, `--max-tensor-bytes`)
  /// is refused with an error naming its node, before the pipeline runs
  /// and after each stage (folding makes more shapes static); see
  /// ir/SizeLimits.h.
  uint64_t MaxTensorBytes = DefaultMaxTensorBytes;
};

/// Names of all passes of the pipeline, in order.
std::vector<std::string> pipelinePassNames();

/// Runs the pipeline on G.
llvm::Error runPipeline(Graph &G, const PipelineOptions &Opts);

} // namespace solder

#endif
