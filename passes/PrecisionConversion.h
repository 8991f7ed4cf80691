//===- PrecisionConversion.h - fp32 graphs to fp16/bf16 ---------*- C++ -*-===//
//
// Matches: every fp32 tensor of the graph (constants, model inputs and
// outputs, node results) when the plan's precision is fp16 or bf16.
// Produces: the same graph in the reduced type, with the weights converted
// once here (finite values beyond the type's range clamped to its largest
// finite value, so an additive mask of -3.4e38 stays a large negative number
// instead of becoming -inf and turning 0 * mask into NaN), and Cast nodes
// where a value changes type:
//
//   - at the model's inputs and outputs, which keep their declared fp32
//     type unless the IO precision is "compute"; loop fusion folds these
//     casts into the first and last kernels;
//   - around the ops the precision policy keeps in fp32 storage (their
//     results leave the reduced type's range: Exp, Pow, sums), see
//     precisionPolicy().
//
// Every generated kernel computes in fp32 whatever its storage type, and
// cuBLASLt/cuDNN accumulate in fp32 (CUBLAS_COMPUTE_32F, fp32 conv
// compute), so "reduced precision" means reduced storage between groups.
// Leaves alone: fp64, integer and bool tensors; fp32 and tf32 plans (tf32
// only lets the libraries use TF32 tensor cores).
// Preconditions: after folding and batchnorm-folding (weights are folded in
// fp32 first), before the fusion passes (they see the final casts).
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_PRECISIONCONVERSION_H
#define SOLDER_PASSES_PRECISIONCONVERSION_H

#include "ir/DType.h"
#include "ir/OpKind.h"
#include "ir/Tensor.h"
#include "passes/Pass.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace solder {

/// One entry of the mixed-precision policy.
struct PrecisionRule {
  OpKind Kind;
  /// Results stay fp32 (inputs are cast up to fp32 before the op).
  bool F32Storage;
  const char *Reason;
};
/// The policy table: ops with a rule of their own. Every other op stores
/// its float results in the reduced type.
llvm::ArrayRef<PrecisionRule> precisionPolicy();

/// The converted weights of one model file, kept across the compiles of
/// its shape variants (runtime/cuda/ShapeVariants.h), which would otherwise
/// each convert the same weights again (BERT-base: 110M values, 0.12 s of
/// a new shape's first run). Only constants whose bytes lie in the file's
/// bytes (Range, kept alive by Owner) are kept: their place there names
/// them, with no hashing; so are constants made from kept ones alone
/// (derived: packed weights). Constants a compile folds (which may depend
/// on the shape) are converted every time. Holds the converted copies
/// (half the file's float bytes) as long as it lives. Thread-safe.
class ReducedWeightCache {
public:
  ReducedWeightCache(llvm::StringRef Range, std::shared_ptr<const void> Owner)
      : Range(Range), Owner(std::move(Owner)) {}

  /// Src converted to T by Make, made once per place in the file.
  std::shared_ptr<const Tensor>
  reduced(const Tensor &Src, DType T,
          llvm::function_ref<std::shared_ptr<const Tensor>()> Make);
  /// Test(Src), computed once per place in the file.
  bool flag(const Tensor &Src, DType T, llvm::function_ref<bool()> Test);
  /// A constant Make computes from Parts alone (horizontal-matmul-fusion's
  /// packed weights), made once for the same parts: the entry keeps the
  /// parts' bytes alive, so their addresses name them. Parts that are the
  /// converted weights above are the same bytes in every variant.
  std::shared_ptr<const Tensor> derived(llvm::StringRef Tag,
                                        llvm::ArrayRef<const Tensor *> Parts,
                                        llvm::function_ref<Tensor()> Make);
  /// Constants converted and flags computed, for tests.
  size_t size() const;

private:
  struct Entry {
    std::shared_ptr<const Tensor> Reduced;
    std::optional<bool> Flag;
  };
  /// The entry of Src and T, or null when Src's bytes are not the file's.
  Entry *find(const Tensor &Src, DType T);

  llvm::StringRef Range;
  std::shared_ptr<const void> Owner;
  mutable std::mutex Mu;
  /// By offset and size in the file, source type and target type.
  std::map<std::tuple<size_t, size_t, DType, DType>, Entry> Entries;
  struct Derived {
    std::shared_ptr<const Tensor> Value;
    std::vector<std::shared_ptr<const void>> Parts;
  };
  /// By tag and the parts' addresses, sizes, types and dims.
  std::map<std::string, Derived> DerivedEntries;
};

class PrecisionConversion : public Pass {
public:
  /// KeepModelIo: the model's fp32 inputs and outputs keep their type.
  /// Cache, when set, keeps converted weights across compiles.
  PrecisionConversion(Precision P, bool KeepModelIo,
                      ReducedWeightCache *Cache = nullptr)
      : Target(P), KeepModelIo(KeepModelIo), Cache(Cache) {}
  llvm::StringRef name() const override { return "precision-conversion"; }
  llvm::Expected<bool> run(Graph &G, DecisionLog &Log) override;

private:
  Precision Target;
  bool KeepModelIo;
  ReducedWeightCache *Cache;
};

} // namespace solder

#endif
