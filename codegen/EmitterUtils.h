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
#include "llvm/ADT/SmallVector.h"
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

  /// Prints the signature and opens the kernel body.
  [[nodiscard]] CudaPrinter::Scope beginKernel();

  /// "int" or "long long": 32-bit when every tensor of the node is small
  /// enough that no index (plus a grid stride) reaches 2^31.
  const std::string &idx() const { return IdxT; }
  bool wideIndex() const { return IdxT != "int"; }
  /// An index literal.
  std::string lit(int64_t V) const;

  /// `for (idx_t Var = global thread id; Var < Count; Var += grid size)`,
  /// and sets a 1-D launch covering Count threads.
  [[nodiscard]] CudaPrinter::Scope gridStrideLoop(llvm::StringRef Var,
                                                  int64_t Count);
  /// A launch of ceil(Count / PerBlock) blocks (at least one, at most
  /// MaxGridBlocks) of BlockSize threads.
  void setLaunch(int64_t Count, int64_t PerBlock);

  /// Emits `const idx_t Name = Expr;` and returns the name.
  std::string let(llvm::StringRef Base, const llvm::Twine &Expr);

  /// The finished kernel.
  GeneratedKernel finish();

private:
  const Node &N;
  const CodegenOptions &Opts;
  CudaPrinter P;
  GeneratedKernel K;
  std::string IdxT;
  std::vector<std::string> Params;
  unsigned NumOut = 0, NumIn = 0;
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

/// How a row reduction combines elements.
enum class RowReduceKind { Sum, Mean, Max };
/// Y[row] = reduce over the Reduced dims of X, rows being the kept dims in
/// order (Y's row-major layout). Used by Reduce* and the global pools.
llvm::Error emitRowReduce(KernelBuilder &B, const Value *X, const Value *Y,
                          llvm::ArrayRef<bool> Reduced, RowReduceKind Kind);

// Family entry points: each registers parameters, prints the kernel and
// sets the launch, or returns an error naming the node.
llvm::Error emitElementwise(KernelBuilder &B);
llvm::Error emitReduction(KernelBuilder &B);
llvm::Error emitDataMovement(KernelBuilder &B);
llvm::Error emitPool(KernelBuilder &B);

/// An error "<node>: <Msg>".
llvm::Error nodeError(const Node &N, const llvm::Twine &Msg);

} // namespace codegen
} // namespace solder

#endif
