//===- FusedValueEmitter.h - Body values of a fused group at coordinates -*- C++
//-*-===//
//
// Private to codegen/: the piece the fused loop and reduction kernels
// share. It prints the computation of one element of a body value of a
// FusedGroup at given coordinates (index expressions, one per dim of the
// value's own shape), walking back through the members that produce it:
//
//   %b = Add(%x, %bias)   f32[1,64,8,8] <- f32[1,64,8,8], f32[64,1,1]
//   %y = Relu(%b)
//
//   compute(%y, [0, c1, c2, c3]) -> compute(%b, [0, c1, c2, c3])
//                                -> %x at [0, c1, c2, c3], %bias at [c1, 0, 0]
//
// Elementwise operands follow numpy broadcasting, views relinearize,
// Transpose permutes, Slice/Expand/Concat/Gather map coordinates as their
// standalone kernels do. Kernel inputs are loaded from memory at their
// row-major offset; scalar constants are literals. Results are memoized by
// (value, coordinates) within the current scope, so a value read twice at
// the same place is computed once and stays in a register.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_CODEGEN_FUSEDVALUEEMITTER_H
#define SOLDER_CODEGEN_FUSEDVALUEEMITTER_H

#include "codegen/EmitterUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include <map>

namespace solder {
namespace codegen {

/// Index expressions, one per dim; "0" for a size-1 dim.
using Coords = std::vector<std::string>;

/// The operands of N read element by element (not the shape-like operands
/// such as Reshape's shape or Slice's starts, whose values are baked in).
llvm::SmallVector<unsigned, 4> dataOperands(const Node &N);

/// The constant behind body value V of Group: V's own, or for a body input
/// the outer operand's. Null when not constant.
const Tensor *constantOf(const Node &Group, const Value *V);

/// The values a kernel computing Roots from the Computable body nodes reads
/// from memory: reached through data operands, produced by none of those
/// nodes, and not constants. Body inputs first (in input order), then other
/// body values (a contraction's library result) in body order.
std::vector<const Value *>
externalReads(const Node &Group, llvm::ArrayRef<const Value *> Roots,
              const llvm::DenseSet<const Node *> &Computable);

/// The outer value the kernel parameter for body value V points at: the
/// group operand for a body input, V itself otherwise.
const Value *outerValue(const Node &Group, const Value *V);

/// An error "fused group <id> (<kind>)[, <member>]: <Msg>".
llvm::Error groupError(const Node &Group, const Node *Member,
                       const llvm::Twine &Msg);

/// Fails, naming the group, when a value the kernel touches has no static
/// shape.
llvm::Error checkGroupStatic(const Node &Group,
                             llvm::ArrayRef<const Node *> Nodes);

/// Options for a group's KernelBuilder: 64-bit indices when any body value
/// is large (an intermediate may be larger than the group's operands).
CodegenOptions groupOptions(const Node &Group, const CodegenOptions &Opts);

/// The one-line summary "group 7 (loop): Add, Relu f32[..] -> f32[..]".
std::string groupSummary(const Node &Group, llvm::StringRef Role,
                         llvm::ArrayRef<const Node *> Nodes,
                         llvm::ArrayRef<const Value *> Inputs,
                         llvm::ArrayRef<const Value *> Outputs);

/// Test-only perturbation (CodegenOptions::PerturbGroupId): prints
/// `p = v + 1e-2 * |v| + 1e-3` for floats (v + 1 otherwise) and returns p.
std::string emitPerturbation(CudaPrinter &P, DType T, const std::string &V);

class FusedValueEmitter {
public:
  /// Computable: the body nodes this kernel may compute.
  FusedValueEmitter(KernelBuilder &B, const Node &Group,
                    llvm::ArrayRef<const Node *> Computable);

  /// Body value V is read from kernel parameter Param.
  void setParam(const Value *V, std::string Param) { Params[V] = Param; }

  /// The compute-type expression (an identifier or literal) of V at C,
  /// printing whatever it needs first.
  llvm::Expected<std::string> compute(const Value *V, const Coords &C);

  /// Records that V at C is Expr in the current scope (a cached or
  /// reduced value).
  void remember(const Value *V, const Coords &C, std::string Expr);

  /// Computes each of Results at C and prints `Target(R) = value;`, the
  /// value converted to the result's storage type; a result whose target
  /// is empty is skipped. With Perturb, result 0 is perturbed first
  /// (`solder compare`'s self-test).
  llvm::Error storeResults(llvm::ArrayRef<const Value *> Results,
                           const Coords &C, bool Perturb,
                           llvm::function_ref<std::string(size_t)> Target);

  /// The coordinates of the linear row-major index Lin over D, as inline
  /// expressions (canonical: equal for equal non-unit dims); remembers
  /// that they linearize back to Lin. With CountDims (and
  /// CodegenOptions::ShapeParams) the dims and strides divided by are
  /// kernel parameters (KernelBuilder::addCount, one per value): a row
  /// kernel's rows of [B, S] then take S as a parameter, so another
  /// sequence length reuses the kernel.
  Coords delinearize(const std::string &Lin, llvm::ArrayRef<int64_t> D,
                     bool CountDims = false);
  /// Records that C over D linearizes to Lin in the current scope.
  void registerLinear(llvm::ArrayRef<int64_t> D, const Coords &C,
                      std::string Lin);

  /// Memo scopes follow the printer's: values computed inside an `if` are
  /// not visible after it.
  void pushScope() { Scopes.emplace_back(); }
  void popScope() { Scopes.pop_back(); }

  /// Coordinates of N's operand Op read at N's result coordinates C under
  /// numpy broadcasting (ResDims: the result's dims).
  llvm::Expected<Coords> broadcastCoords(const Node &N, const Value *Op,
                                         llvm::ArrayRef<int64_t> ResDims,
                                         const Coords &C);

  llvm::Error error(const Node *Member, const llvm::Twine &Msg) const {
    return groupError(Group, Member, Msg);
  }

private:
  using Key = std::pair<const Value *, std::string>;
  const std::string *lookup(const Key &K) const;
  const std::string *lookupLinear(const std::string &K) const;
  std::string linearize(const Coords &C, llvm::ArrayRef<int64_t> D);
  std::string offsetOf(const Value *V, const Coords &C);
  llvm::Expected<std::string> computeNode(const Node &N, unsigned Result,
                                          const Coords &C);
  llvm::Expected<std::string> elementwise(const Node &N, const Coords &C);
  llvm::Expected<std::string> reshape(const Node &N, const Coords &C);
  llvm::Expected<std::string> transpose(const Node &N, const Coords &C);
  llvm::Expected<std::string> slice(const Node &N, const Coords &C);
  llvm::Expected<std::string> concat(const Node &N, const Coords &C);
  llvm::Expected<std::string> gather(const Node &N, const Coords &C);
  /// The count parameter holding V (one per value).
  std::string count(int64_t V);

  KernelBuilder &B;
  CudaPrinter &P;
  const Node &Group;
  llvm::DenseSet<const Node *> Computable;
  llvm::DenseMap<const Value *, std::string> Params;
  /// Non-scalar constants baked in as tables, by value.
  llvm::DenseMap<const Value *, std::string> Tables;
  std::map<int64_t, std::string> Counts;
  struct Scope {
    std::map<Key, std::string> Values;
    std::map<std::string, std::string> Linear;
  };
  std::vector<Scope> Scopes;
};

} // namespace codegen
} // namespace solder

#endif
