//===- FusionSupport.h - What the fusion passes share ------------*- C++
//-*-===//
//
// The state one pipeline run hands to its fusion passes (explicitly owned by
// the run, not global): the next group id, and what the user disabled. Plus
// the legality helpers both fusion passes use: cycle checks and which
// reductions a fused row kernel can compute.
//
// Group ids are handed out in the order candidates are formed, and a
// candidate the user disabled still consumes its id, so disabling one
// group leaves the ids of the others as they were.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_FUSIONSUPPORT_H
#define SOLDER_PASSES_FUSIONSUPPORT_H

#include "ir/FusedGroup.h"
#include "passes/Pass.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include <optional>
#include <string>
#include <vector>

namespace solder {

class FusionState {
public:
  /// Disabled: group ids ("7") and ONNX node names.
  explicit FusionState(const std::vector<std::string> &Disabled);

  /// A fresh group id.
  int64_t takeId() { return NextId++; }
  /// Makes later ids start after every id already in G (a re-run of the
  /// pipeline on a fused graph).
  void reserveIdsOf(const Graph &G);
  /// Why a candidate group with this id and these members must not be
  /// formed, or nullopt. Remembers the members of a disabled group, so they
  /// are not fused into any other group either.
  std::optional<std::string> disabledReason(int64_t Id,
                                            llvm::ArrayRef<Node *> Members);
  /// Whether N was a member of a group the user disabled.
  bool isExcluded(const Node &N) const;

private:
  int64_t NextId = 0;
  llvm::StringSet<> DisabledIds, DisabledNames, Excluded;
};

/// Whether making Members one node would create a cycle: some path leaves
/// the set and comes back into it.
bool wouldCreateCycle(const llvm::DenseSet<const Node *> &Members);

/// The axes a row-reduction kernel reduces for N (Reduce* with constant
/// axes, Softmax/LogSoftmax, LayerNormalization, RMSNormalization), as a
/// mask over N's data operand, or nullopt when N is not such a reduction.
std::optional<std::vector<bool>> rowReductionAxes(const Node &N);

/// Whether the fused row-reduction kernel implements ops of kind K at all
/// (rowReductionAxes may still refuse one node: axes not constant).
bool hasFusedRowKernel(OpKind K);

/// Whether Mask reduces exactly a non-empty trailing run of dims (the rows
/// are then contiguous in memory).
bool reducesInnermostDims(const std::vector<bool> &Mask);

/// Whether N may be a member of a loop group or a reduction group's
/// prologue/epilogue: not a group, not constant-only, elementwise,
/// broadcast or index-composable injective (op registry), every result
/// static.
bool isLoopFusible(const Node &N);

} // namespace solder

#endif
