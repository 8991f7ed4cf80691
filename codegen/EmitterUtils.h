//===- EmitterUtils.h - Pieces shared by the kernel emitters ----*- C++ -*-===//
//
// Private to codegen/: the KernelBuilder every per-family emitter prints
// into (parameters, index type, grid-stride loops, launch shape), the
// index arithmetic helpers (coordinates and offsets of a linear index over
// baked dims, with dims merged where the strides allow), and the entry
// points of the family emitters.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_CODEGEN_EMITTERUTILS_H
#define SOLDER_CODEGEN_EMITTERUTILS_H

#include "codegen/CudaPrinter.h"
#include "codegen/ExprTable.h"
#include "codegen/GeneratedKernel.h"
#include "codegen/KernelEmitter.h"
#include "ir/ReduceKind.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>
#include <string>

namespace solder {
namespace codegen {

using Dims = llvm::SmallVector<int64_t, 6>;

/// Static dims of V (the emitters run after the static-shape check).
Dims dimsOf(const Value *V);
int64_t numElementsOf(llvm::ArrayRef<int64_t> D);
/// Row-major strides of D.
Dims rowMajorStrides(llvm::ArrayRef<int64_t> D);
/// Strides of a tensor of dims In read at the coordinates of Out under
/// numpy broadcasting (right-aligned; 0 on broadcast dims).
Dims broadcastStrides(llvm::ArrayRef<int64_t> In, llvm::ArrayRef<int64_t> Out);
/// Maps a possibly negative axis into [0, Rank).
std::optional<int64_t> normalizeAxis(int64_t Axis, int64_t Rank);

/// One kernel being printed: its parameters, index type and launch shape.
class KernelBuilder {
public:
  KernelBuilder(const Node &N, const CodegenOptions &Opts, std::string Name);

  const Node &node() const { return N; }
  const CodegenOptions &opts() const { return Opts; }
  CudaPrinter &p() { return P; }

  /// Registers a buffer parameter; returns its name (out0.., in0..).
  /// Register everything before beginKernel().
  std::string addOutput(const Value *V);
  std::string addInput(const Value *V);
  /// Registers a tensor-map parameter (after every buffer) of the Input'th
  /// registered input; returns its name (tmap0..).
  std::string addTensorMap(unsigned Input, const TensorMapShape &Shape);
  /// Registers the scratch parameter (after every buffer, before the
  /// tensor maps: GeneratedKernel::ScratchBytes); returns its name.
  std::string addScratch(uint32_t Bytes);
  /// Registers a count parameter of value V (GeneratedKernel::Counts, last
  /// in the signature, which finish() completes: loops printed after
  /// beginKernel may register them); returns an index-typed expression of
  /// it.
  std::string addCount(int64_t V);

  /// Prints the signature and opens the kernel body.
  [[nodiscard]] CudaPrinter::Scope beginKernel();

  /// "int" or "long long": 32-bit when every tensor of the node is small
  /// enough that no index (plus a grid stride) reaches 2^31.
  const std::string &idx() const { return IdxT; }
  bool wideIndex() const { return IdxT != "int"; }
  /// An index literal.
  std::string lit(int64_t V) const;

  /// `for (idx_t Var = global thread id; Var < Count; Var += grid size)`,
  /// Count a parameter (addCount), and sets a 1-D launch covering Count
  /// threads.
  [[nodiscard]] CudaPrinter::Scope gridStrideLoop(llvm::StringRef Var,
                                                  int64_t Count);
  /// A launch of ceil(Count / PerBlock) blocks (at least one, at most
  /// MaxGridBlocks) of BlockSize threads.
  void setLaunch(int64_t Count, int64_t PerBlock);
  /// A 3-D grid of blocks of Threads (at most BlockSize) threads.
  void setGrid(std::array<unsigned, 3> Grid, unsigned Threads);

  /// Kernel attributes printed before the name (`__cluster_dims__(..)`).
  void setAttributes(std::string A) { Attributes = std::move(A); }
  /// Launched cooperatively (GeneratedKernel::Cooperative).
  void setCooperative() { K.Cooperative = true; }
  /// Dynamic shared memory of the launch, in bytes.
  void setDynamicShared(unsigned Bytes);
  /// With CodegenOptions::DependentLaunch: the kernel body waits for the
  /// previous grid itself (solder_grid_wait() before its first read of
  /// anything a kernel writes), so it can fetch constants first, and lets
  /// the next launch begin itself (solder_launch_dependents(); a block
  /// that never calls it counts once it exits). Call before beginKernel;
  /// returns whether the kernel is a dependent launch.
  bool waitForPreviousGridInBody();

  /// Emits `const idx_t Name = Expr;` and returns the name.
  std::string let(llvm::StringRef Base, const llvm::Twine &Expr);

  /// Marks the kernel as implementing fused group Id: its node names and
  /// the summary printed in its header comment (call before beginKernel).
  void describeGroup(int64_t Id, std::vector<std::string> NodeNames,
                     std::string Summary);

  /// The finished kernel.
  GeneratedKernel finish();

private:
  const Node &N;
  const CodegenOptions &Opts;
  CudaPrinter P;
  GeneratedKernel K;
  std::string IdxT;
  std::vector<std::string> Params;
  std::string Attributes;
  bool OwnWait = false;
  unsigned NumOut = 0, NumIn = 0;
  std::vector<std::string> MapParams;
  std::string ScratchParam;
  std::vector<std::string> CountParams;
};

/// Emits the offsets sum_d coord_d(Var) * Strides[k][d] of the linear
/// row-major index Var over Shape, one per stride set; returns each as an
/// expression ("0", Var itself, or a local). Size-1 dims are dropped and
/// neighbouring dims merged when every stride set allows it.
std::vector<std::string> emitOffsets(KernelBuilder &B, llvm::StringRef Var,
                                     llvm::ArrayRef<int64_t> Shape,
                                     llvm::ArrayRef<Dims> Strides);
/// Emits the coordinates of Var over Shape (row-major); a size-1 dim's
/// coordinate is "0".
std::vector<std::string> emitCoords(KernelBuilder &B, llvm::StringRef Var,
                                    llvm::ArrayRef<int64_t> Shape);

/// The int64 values of constant operand I of N, or an error naming the
/// node and What ("starts", "axis") when it is absent or not a constant.
llvm::Expected<llvm::SmallVector<int64_t, 8>>
constInts(const Node &N, unsigned I, const char *What);

/// A constant scalar operand as a compute-type literal, when it can be
/// represented exactly.
std::optional<std::string> scalarLiteral(const Value *V);

/// The warp/block reduction helpers (solder_max, SolderSum, SolderMax,
/// solder_warp_reduce, solder_block_reduce) as one declaration.
extern const char *const ReduceHelpers;

/// Rows x elements view of a tensor, and the group size owning a row.
struct RowPlan {
  Dims KeptDims, KeptStrides, RedDims, RedStrides;
  int64_t Rows = 1, Len = 1;
  unsigned Group = 1;
};

/// Splits XDims into kept (row) and reduced (element) dims; one thread per
/// row up to 16 elements, a warp up to 1024, else a block of BlockSize.
RowPlan planRows(llvm::ArrayRef<int64_t> XDims, llvm::ArrayRef<bool> Reduced,
                 unsigned BlockSize);

/// Prints the row loop (uniform per thread group, so block-wide steps are
/// never divergent) and the lane; sets the launch.
class RowKernel {
public:
  RowKernel(KernelBuilder &B, const RowPlan &Plan);

  /// `for (j = lane; j < Len; j += Group)`; Offsets gets the element's
  /// offsets under each extra stride set over the reduced dims (the input's
  /// own offset first, already plus the row base).
  [[nodiscard]] CudaPrinter::Scope
  elements(std::vector<std::string> &Offsets,
           llvm::ArrayRef<Dims> ExtraStrides = {});

  /// Combines V across the group in place (Op: "SolderSum"/"SolderMax").
  void combine(llvm::StringRef V, llvm::StringRef Op);

  /// "lane", or "0" when one thread owns a row.
  const std::string &lane() const { return Lane; }
  /// Ends the row loop.
  void close() { Loop.reset(); }

private:
  KernelBuilder &B;
  const RowPlan &Plan;
  std::string Lane, Base;
  std::optional<CudaPrinter::Scope> Loop;
};

/// Y[row] = reduce over the Reduced dims of X, rows being the kept dims in
/// order (Y's row-major layout). Used by Reduce* and the global pools.
llvm::Error emitRowReduce(KernelBuilder &B, const Value *X, const Value *Y,
                          llvm::ArrayRef<bool> Reduced, ReduceKind Kind);

// Family entry points: each registers parameters, prints the kernel and
// sets the launch, or returns an error naming the node.
llvm::Error emitElementwise(KernelBuilder &B);
llvm::Error emitReduction(KernelBuilder &B);
llvm::Error emitDataMovement(KernelBuilder &B);
llvm::Error emitPool(KernelBuilder &B);
llvm::Error emitCumSum(KernelBuilder &B);
llvm::Error emitOneHot(KernelBuilder &B);
llvm::Error emitResize(KernelBuilder &B);
llvm::Error emitTopK(KernelBuilder &B);
llvm::Error emitAttention(KernelBuilder &B);
llvm::Error emitScatterElements(KernelBuilder &B);
llvm::Error emitScatterND(KernelBuilder &B);
/// Resize's roi, scales and sizes must be constants to generate code.
llvm::Error checkResizeOperands(const Node &N);

/// The kernel of a FusedGroup node of kind reduction
/// (FusedReductionEmitter.cpp).
llvm::Expected<GeneratedKernel> emitFusedReduction(const Node &Group,
                                                   const CodegenOptions &Opts,
                                                   KernelNamer &Names);
/// The same for some of a group's body nodes (a contraction group's rest
/// after its library call, when that holds the row reduction).
llvm::Expected<GeneratedKernel>
emitFusedReduction(const Node &Group, llvm::ArrayRef<const Node *> Members,
                   const CodegenOptions &Opts, KernelNamer &Names);

/// Replaces every `$NAME` in Text by its value (longest names first, so
/// $QS never eats the start of $QSB). TensorCoreSupport.cpp.
std::string substitute(std::string Text,
                       std::vector<std::pair<std::string, std::string>> Vars);
/// V as a float literal that reads back as the same float ("0.125f").
std::string floatLiteral(double V);
/// Prints Text (lines separated by '\n') into the kernel, one line each.
void printLines(CudaPrinter &P, llvm::StringRef Text);
/// The mma.sync/ldmatrix/cp.async helpers for f16 or bf16 operands.
std::string mmaHelpers(DType T);
/// Distributed shared memory reads and the cluster barrier (sm_90; uses
/// mmaHelpers' solder_smem).
std::string clusterHelpers();
/// solder_rowgroup_wait / solder_rowgroup_leave: blocks of a cooperative
/// launch meeting through counters in the kernel's scratch.
std::string rowGroupHelpers();

/// An error "<node>: <Msg>".
llvm::Error nodeError(const Node &N, const llvm::Twine &Msg);

} // namespace codegen
} // namespace solder

#endif
