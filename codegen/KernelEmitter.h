//===- KernelEmitter.h - One CUDA kernel per IR node ------------*- C++ -*-===//
//
// Turns each node of a static graph into a CUDA C++ translation unit with
// one `extern "C" __global__` kernel. Shapes, strides and attribute values
// are baked in as constants (one plan per set of input shapes), so a
// kernel's parameters are only device pointers: the results it writes, then
// the operands it reads (constant scalars are baked in and not passed).
// Views (Reshape, Flatten, Squeeze, Unsqueeze, Identity) and library calls
// (MatMul, Gemm, Conv, ConvTranspose: cuBLASLt/cuDNN in the runtime) get no
// kernel. The same graph always gives the same bytes.
//
// Per-family emitters live in ElementwiseEmitter.cpp, ReductionEmitter.cpp,
// DataMovementEmitter.cpp and PoolEmitter.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_CODEGEN_KERNELEMITTER_H
#define SOLDER_CODEGEN_KERNELEMITTER_H

#include "codegen/GeneratedKernel.h"
#include "ir/AttentionSpec.h"
#include "ir/Graph.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Error.h"
#include <array>
#include <optional>
#include <set>
#include <vector>

namespace solder {

/// Every knob of code generation, in one typed struct.
struct CodegenOptions {
  /// Threads per block of every kernel.
  unsigned BlockSize = 256;
  /// Grid-stride loops launch at most this many blocks.
  unsigned MaxGridBlocks = 8192;
  /// 16-byte loads/stores for contiguous elementwise kernels (buffers must
  /// then be 16-byte aligned, as cudaMalloc and the runtime's arena are).
  bool Vectorize = true;
  /// Use 64-bit index arithmetic even when every tensor is small enough for
  /// 32-bit (for testing the wide path).
  bool Force64BitIndex = false;
  /// Compute capability the kernels target (sm_XY as XY): tensor-core
  /// paths (mma.sync m16n8k16, ldmatrix, cp.async) need 80 or more.
  unsigned SmVersion = 90;
  /// Test only: the kernel of the fused group with this id adds a small
  /// error to its first output (see `solder compare`).
  int64_t PerturbGroupId = -1;
  /// Contraction groups (ids) that run as one generated tensor-core GEMM
  /// (GemmEmitter.cpp) instead of a library call plus a rest kernel.
  std::set<int64_t> GeneratedGemmGroups;
  /// Of those, groups with a row normalization (norm-epilogue-fusion's)
  /// that run as two kernels: the generated GEMM up to the
  /// normalization's input (normSplitValue), then a row kernel for the
  /// rest, as the library path runs them. Tuning takes this form for a
  /// chain of generated kernels launched as dependents.
  std::set<int64_t> SplitNormGroups;
  /// Those GEMMs run the wgmma main loop wherever it applies
  /// (`--gemm-kernels wgmma`), not only where wgmmaPreferred measured it
  /// faster.
  bool PreferWgmma = false;
  /// Programmatic dependent launch (sm_90 and later): every kernel starts
  /// by letting the next launch begin and then waiting for the previous
  /// grid (griddepcontrol), so the runtime may launch it while its
  /// predecessor's last blocks still run (GeneratedKernel::DependentLaunch).
  bool DependentLaunch = false;
  /// Lengths that differ between a dynamic model's variants are kernel
  /// parameters (KernelBuilder::addCount) instead of literals: attention's
  /// sequence lengths and the strides that grow with them, a row kernel's
  /// rows per sequence, a Gather's axis size. Variants at other sequence
  /// lengths then share these kernels' cubins. Off for static plans, which
  /// run faster with them baked in (BERT-base b32 s128 on an H100:
  /// attention 276 us baked, 285 us as parameters).
  bool ShapeParams = false;
  /// Convolution groups (ids) that run as one cuDNN operation graph
  /// (ConvGraphEpilogue.h): no rest kernel is emitted for them.
  std::set<int64_t> ConvGraphGroups;
};

/// Deterministic kernel names: `solder_<node index>_<op>` where the index
/// is the node's position in its graph (plus `_<n>` should one node ever
/// need several kernels).
class KernelNamer {
public:
  explicit KernelNamer(const Graph &G);
  /// A fresh name for a kernel of N.
  std::string nameFor(const Node &N);
  /// The same with Tag in place of the op name (fused groups:
  /// `solder_<index>_g<id>_loop`).
  std::string nameFor(const Node &N, llvm::StringRef Tag);

private:
  llvm::DenseMap<const Node *, unsigned> Index;
  llvm::StringSet<> Used;
};

/// The kernel implementing N, nullopt for views and library calls, or an
/// error naming the node (unsupported op or dtype, dynamic shapes). A
/// FusedGroup of kind loop or reduction gives one kernel for its whole
/// body; one of kind contraction gives nullopt (see emitGraphKernels).
llvm::Expected<std::optional<GeneratedKernel>>
emitKernel(const Node &N, const CodegenOptions &Opts, KernelNamer &Names);

/// One loop kernel computing Nodes (body nodes of FusedGroup node Group, in
/// body order): a loop group's whole body, or the LibraryEpilogue::Rest of
/// a contraction group. Values the nodes read that none of them produce are
/// kernel inputs (Group.operand(I) for body input I; another body value,
/// such as the library call's result, as itself); body outputs they produce
/// are kernel outputs (Group.result(J) for body output J); scalar constants
/// are baked in. Named `solder_<index>_g<id>_loop` (`..._epilogue` for a
/// contraction group). Errors name the group.
llvm::Expected<GeneratedKernel>
emitFusedKernel(const Node &Group, llvm::ArrayRef<const Node *> Nodes,
                const CodegenOptions &Opts, KernelNamer &Names);

/// Why contraction group Group has no generated tensor-core GEMM for
/// compute capability SmVersion, or "" when it has one.
std::string generatedGemmUnsupported(const Node &Group, unsigned SmVersion);
/// That kernel (GemmEmitter.cpp): the whole group (matmul, epilogue, row
/// normalization) in one launch, named `solder_<index>_g<id>_gemm`; an
/// error naming the group when unsupported. Stats (deferredStatsGroup of
/// Group): the kernel also computes that group's LayerNorm statistics of
/// A's rows and stores its results, so its own kernel need not run; an
/// error when this GEMM's main loop cannot (no TMA loop; split K,
/// persistent or 256 wide; K not a multiple of 64).
llvm::Expected<GeneratedKernel> emitGeneratedGemm(const Node &Group,
                                                  const CodegenOptions &Opts,
                                                  KernelNamer &Names,
                                                  const Node *Stats = nullptr);

/// The node (a LayerNormalization, or a group of one) computing
/// norm-deferral's statistics of the last axis of contraction group
/// Group's A, its normalized result unused, which Group reads; or null.
const Node *deferredStatsGroup(const Node &Group);
/// R's LayerNormalization when R is such a node, else null.
const Node *statsNormOf(const Node &R);
/// The LayerNormalization's result behind R's result J.
const Value *statsNormValue(const Node &R, unsigned J);

/// The value a contraction group with a row normalization in its epilogue
/// passes from its generated GEMM to its row kernel when it runs split
/// (CodegenOptions::SplitNormGroups): the normalization's input, or, when
/// that is a residual (a group operand of its shape) added to the
/// epilogue, the value before the add, so the row kernel reads the
/// residual. Null when the group has no normalization, or a member after
/// the GEMM's part reads another value that part computes.
const Value *normSplitValue(const Node &Group);

/// Kernels of every node of G, in node order; a contraction group gives the
/// kernel of what its library call leaves over, if anything, or its
/// generated GEMM (CodegenOptions::GeneratedGemmGroups).
llvm::Expected<std::vector<GeneratedKernel>>
emitGraphKernels(const Graph &G, const CodegenOptions &Opts = {});

/// True when N runs without a generated kernel (a view, a library call, or
/// a Slice the attention kernels read through).
bool isHandledWithoutKernel(const Node &N);

/// Whether Slice or Split node N is read through by attention kernels
/// instead of running: each result (rank 3, static) is read only as Q, K
/// or V of 3-D Attention nodes, and is a view of the input with unit
/// stride along the hidden dim (the packed QKV projection's columns). The
/// attention kernel then reads the packed tensor at the part's offset and
/// row stride.
bool isReadThroughByAttention(const Node &N);

/// Where one of Attention's Q, K and V is read: Src (the operand, or the
/// packed tensor a Slice/Split part is read through) at element Offset,
/// with element Strides over [b, h, s, d].
struct AttentionOperandLayout {
  const Value *Src = nullptr;
  int64_t Offset = 0;
  std::array<int64_t, 4> Strides = {};
};
/// The layouts of Attention node N's Q, K and V (S is N's spec).
std::array<AttentionOperandLayout, 3>
attentionOperandLayouts(const Node &N, const AttentionSpec &S);

} // namespace solder

#endif
