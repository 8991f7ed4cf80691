//===- Plan.h - An executable plan for the GPU ------------------*- C++ -*-===//
//
// A Plan is everything needed to run a compiled model on a GPU, as plain
// host data: ordered steps (kernel launches, cuBLASLt matmuls, cuDNN
// convolutions, device copies), the kernels' sources and cubins, the memory
// plan of the activation arena, and the weights as one byte blob. It is
// built from a Graph on any machine (NVRTC needs no GPU), written to and
// read from plan files (PlanFile.h), and loaded onto a device by the
// runtime (Runtime.h).
//
// Every tensor a step touches is a BufferRef: a space (weights blob,
// activation arena, a bound input or output) plus a byte offset. Views
// (Reshape, Flatten, Squeeze, Unsqueeze, Identity) have no step: their
// result is a BufferRef equal to their operand's.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_RUNTIME_CUDA_PLAN_H
#define SOLDER_RUNTIME_CUDA_PLAN_H

#include "codegen/ConvGraphEpilogue.h"
#include "codegen/GeneratedKernel.h"
#include "ir/DType.h"
#include "passes/Pass.h"
#include "runtime/cuda/WeightBlob.h"
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace solder {

/// Scratch: the execution context's own zeroed memory that kernels keep
/// between runs (GeneratedKernel::ScratchBytes), Plan::ScratchBytes long.
enum class BufferSpace : uint8_t { Weights, Arena, Input, Output, Scratch };

struct BufferRef {
  BufferSpace Space = BufferSpace::Arena;
  /// Input or output index for those spaces; 0 otherwise.
  uint32_t Index = 0;
  uint64_t Offset = 0;
  bool operator==(const BufferRef &O) const {
    return Space == O.Space && Index == O.Index && Offset == O.Offset;
  }
};

/// A graph input or output: name, element type, static dims.
struct PlanTensor {
  std::string Name;
  DType Elem = DType::F32;
  std::vector<int64_t> Dims;
  uint64_t numElements() const;
  uint64_t bytes() const { return numElements() * dtypeSize(Elem); }
};

/// A tensor map a kernel takes by value after its pointers
/// (KernelTensorMap), of the buffer its step passes as argument Arg.
struct PlanTensorMap : TensorMapShape {
  uint32_t Arg = 0;
};

/// One kernel: generated (or runtime helper) source plus its cubin.
struct PlanKernel {
  std::string Name;
  std::string Source;
  /// Compiled for Plan::Arch; empty until compiled.
  std::string Cubin;
  /// The function Cubin holds, when it is not Name: a kernel whose source
  /// differs from an earlier one's only in its name (the same LayerNorm in
  /// every layer) gets that kernel's cubin and runs its function.
  std::string Symbol;
  std::array<unsigned, 3> Grid = {1, 1, 1};
  std::array<unsigned, 3> Block = {1, 1, 1};
  unsigned DynamicSharedBytes = 0;
  std::vector<std::string> NodeNames;
  std::string Summary;
  /// The fused group (FusedGroup id) the kernel implements, or -1.
  int64_t GroupId = -1;
  /// Tensor maps the kernel takes after its pointers, in order.
  std::vector<PlanTensorMap> TensorMaps;
  /// Launched as a programmatic dependent of the step before (the kernel
  /// waits for it itself: GeneratedKernel::DependentLaunch).
  bool DependentLaunch = false;
  /// Its blocks wait for each other (GeneratedKernel::Cooperative): a
  /// cooperative launch (and a dependent one too where DependentLaunch:
  /// such a kernel lets the next launch only once all its blocks run).
  bool Cooperative = false;
  /// Counts it takes by value after everything else
  /// (GeneratedKernel::Counts).
  std::vector<int64_t> Counts;

  const std::string &symbol() const { return Symbol.empty() ? Name : Symbol; }
};

/// D = epilogue(alpha * op(A) op(B) + beta * C), column-major, in the form
/// cuBLASLt takes it (the builder swaps operands so row-major ONNX tensors
/// need no transposes): D is M x N with leading dimension M.
struct GemmConfig {
  /// cuBLASLt's epilogue: what is applied after alpha AB + beta C. The
  /// *Bias kinds add BiasVec, a length-M vector (one value per row of D,
  /// i.e. per column of the row-major result), shared by every batch.
  enum class Epilogue : uint8_t { None, Bias, Relu, ReluBias, Gelu, GeluBias };
  /// Where beta C comes from.
  enum class CSource : uint8_t {
    None,     ///< beta is 0
    InPlace,  ///< C was copied into D by an earlier step; beta scales D
    Separate, ///< C is its own buffer (a residual), laid out like D
  };
  DType Elem = DType::F32;
  bool TransA = false, TransB = false;
  int64_t M = 0, N = 0, K = 0;
  int64_t Lda = 0, Ldb = 0, Ldd = 0;
  int64_t Batch = 1;
  int64_t StrideA = 0, StrideB = 0, StrideD = 0;
  /// Batches one stride cannot step through (e.g. [B, heads] of a matrix
  /// read straight out of a [B, S, heads, d] tensor): the batch dims, outer
  /// first, and each operand's element stride per dim. The runtime hands
  /// cuBLASLt arrays of pointers then (a separate C uses D's strides).
  /// Empty for a strided batch.
  std::vector<int64_t> BatchDims, BatchStrideA, BatchStrideB, BatchStrideD;
  float Alpha = 1.0f, Beta = 0.0f;
  Epilogue Epi = Epilogue::None;
  CSource CFrom = CSource::None;
  bool AllowTF32 = false;
  /// The algorithm chosen on Plan::TunedOn (cuBLASLt's opaque
  /// cublasLtMatmulAlgo_t) and its workspace; unset = ask the heuristics
  /// when the plan is loaded.
  bool HasAlgo = false;
  std::array<uint64_t, 8> AlgoData = {};
  uint64_t AlgoWorkspace = 0;
  BufferRef A, B, BiasVec, C, D;

  bool pointerArrays() const { return !BatchDims.empty(); }
  bool hasBias() const {
    return Epi == Epilogue::Bias || Epi == Epilogue::ReluBias ||
           Epi == Epilogue::GeluBias;
  }
};

/// A cuDNN convolution (forward) or transposed convolution (backward data).
/// Dims are cuDNN's NC + spatial, at least 2 spatial dims (1-D problems get
/// a unit height).
struct ConvConfig {
  enum class Activation : uint8_t { Identity, Relu };
  DType Elem = DType::F32;
  bool Transpose = false;
  /// X, Y (and Z) are NHWC and W is KRSC in memory; the dims below are
  /// in NCHW order either way (ir/Layout.h).
  bool Nhwc = false;
  std::vector<int64_t> XDims, WDims, YDims; ///< Y is the step's result
  std::vector<int> Pads, Strides, Dilations;
  int Groups = 1;
  bool AllowTF32 = false;
  /// cudnnConvolutionFwdAlgo_t / BwdDataAlgo_t chosen on a GPU, or -1 to
  /// choose when the plan is loaded.
  int Algo = -1;
  /// cudnnMathType_t to run the chosen algorithm with.
  int MathType = 0;
  /// Fused (forward only): y = act(conv(x, w) + Alpha2 z + bias) through
  /// cudnnConvolutionBiasActivationForward. Bias (YDims[1] values) is
  /// always set then (zeros when the model has none); Z only when HasZ.
  bool Fused = false;
  Activation Act = Activation::Identity;
  bool HasZ = false;
  float Alpha2 = 0.0f;
  BufferRef X, W, Y, Bias, Z;
  /// Graph (forward, NHWC, f16/bf16): the convolution and the pointwise
  /// chain after it as one cuDNN backend operation graph (CudnnConvGraph.h,
  /// codegen/ConvGraphEpilogue.h); Fused, Bias and Z are unused then.
  /// GraphReads[I] is the buffer Operand tensor I reads (others unused);
  /// the Output tensor is Y.
  bool Graph = false;
  std::vector<ConvGraphTensor> GraphTensors;
  std::vector<ConvGraphOp> GraphOps;
  std::vector<BufferRef> GraphReads;
  /// Which engine runs the graph: -1 = the first configuration cuDNN's
  /// heuristics offer that finalizes; K >= 0 = configuration K of
  /// heuristics mode A's list (tuning times the first few and keeps the
  /// fastest; a plan loaded where that one does not finalize takes -1's).
  int32_t GraphEngine = -1;
};

/// Scaled dot-product attention as one cuDNN call (the backend graph API's
/// fused flash-attention engines): O = softmax(Scale Q K^T + Bias [causal])
/// V, fp32 scores and softmax, Q/K/V/Bias/O of type Elem (f16 or bf16).
/// Every tensor is described over [b, h, s, d] by element strides, so Q, K
/// and V may be read straight out of a packed projection and O written in
/// the layout the output projection reads.
struct AttentionConfig {
  DType Elem = DType::F16;
  int64_t Batch = 0, QHeads = 0, KvHeads = 0, QLen = 0, KvLen = 0;
  int64_t HeadDim = 0, VHeadDim = 0;
  std::array<int64_t, 4> QStrides = {}, KStrides = {}, VStrides = {},
                         OStrides = {};
  float Scale = 1.0f;
  /// Row i sees keys 0..i only (top-left aligned, as Attention's
  /// is_causal).
  bool Causal = false;
  /// An additive mask over [B, Hq, Sq, Sk] of type BiasElem (Elem or
  /// f32); a dim of 1 broadcasts.
  bool HasBias = false;
  DType BiasElem = DType::F16;
  std::array<int64_t, 4> BiasDims = {}, BiasStrides = {};
  BufferRef Q, K, V, Bias, O;
};

struct CopyConfig {
  BufferRef Src, Dst;
  uint64_t Bytes = 0;
};

struct PlanStep {
  enum class Kind : uint8_t { Kernel, Gemm, Conv, Copy, Attention };
  Kind K = Kind::Kernel;
  /// Index into Plan::Kernels / Gemms / Convs / Copies / Attentions.
  uint32_t Index = 0;
  /// Kernel parameters (Kernel steps only), in the kernel's order.
  std::vector<BufferRef> Args;
  /// The node(s) implemented, for messages and profiles.
  std::string Label;
  /// The fused group (FusedGroup id) this step belongs to, or -1.
  int64_t GroupId = -1;
};

/// A tensor a group reads or writes, where it lives during a run (for
/// `solder compare`, which reads it between steps).
struct PlanValue {
  std::string Name;
  DType Elem = DType::F32;
  std::vector<int64_t> Dims;
  BufferRef Ref;
  bool operator==(const PlanValue &O) const {
    return Name == O.Name && Elem == O.Elem && Dims == O.Dims && Ref == O.Ref;
  }
};

/// One fused group of the compiled graph and how the plan runs it; also
/// one entry (Id -1, Kind "single") per unfused node that has steps, so
/// every step but the final copies into outputs belongs to exactly one
/// entry.
struct PlanGroup {
  int64_t Id = -1;
  std::string Kind;                 ///< "contraction", "loop", "reduction",
                                    ///< "single"
  std::vector<std::string> Members; ///< ONNX node names, in body order
  /// How it runs, e.g. "cuBLASLt matmul + BIAS epilogue + residual (beta
  /// C)" or "cuDNN conv + generated kernel solder_12_g3_epilogue".
  std::string RunsAs;
  std::vector<uint32_t> Steps; ///< indices into Plan::Steps, in order
  /// The group's operands and results (the node's, for a single node).
  std::vector<PlanValue> Operands, Results;
};

/// One intermediate placed in the arena (for reports and tests).
struct PlanBuffer {
  std::string Name;
  uint64_t Offset = 0, Bytes = 0;
  unsigned FirstStep = 0, LastStep = 0;
};

struct Plan {
  std::string ModelName;
  std::vector<PlanTensor> Inputs, Outputs;
  /// The executed graph as IR text, large constants elided (for reading).
  std::string IrText;
  /// "sm_90": what the cubins were compiled for.
  std::string Arch;
  /// The precision the graph was compiled in (fp16: reduced storage).
  Precision Prec = Precision::F32;
  /// The GPU (its name) whose library algorithms the plan holds
  /// (GemmConfig::AlgoData, ConvConfig::Algo); empty = none chosen yet. A
  /// plan loaded on another GPU model chooses them again.
  std::string TunedOn;
  std::vector<PlanKernel> Kernels;
  std::vector<GemmConfig> Gemms;
  std::vector<ConvConfig> Convs;
  std::vector<CopyConfig> Copies;
  std::vector<AttentionConfig> Attentions;
  std::vector<PlanStep> Steps;
  std::vector<PlanBuffer> Buffers;
  uint64_t ArenaBytes = 0;
  uint64_t NaiveArenaBytes = 0;
  /// Kernels' scratch (BufferSpace::Scratch), zero when a context is
  /// created; each kernel's at its own 256-byte aligned offset.
  uint64_t ScratchBytes = 0;
  /// The fused groups, in graph order, and every decision the pipeline's
  /// passes noted (applied and rejected, with reasons): the fusion report.
  std::vector<PlanGroup> Groups;
  std::vector<DecisionRecord> Decisions;
  /// Every constant a step reads, 256-byte aligned.
  WeightBlob Weights;

  /// How many launches (kernels + library calls + copies) one run makes.
  size_t numLaunches() const { return Steps.size(); }
};

} // namespace solder

#endif
