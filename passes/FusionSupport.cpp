//===- FusionSupport.cpp - What the fusion passes share -------------------===//
#include "passes/FusionSupport.h"
#include "ir/OpRegistry.h"
#include "llvm/ADT/SmallVector.h"

namespace solder {

FusionState::FusionState(const std::vector<std::string> &Disabled) {
  for (const std::string &D : Disabled) {
    bool Numeric = !D.empty() &&
                   llvm::all_of(D, [](char C) { return C >= '0' && C <= '9'; });
    (Numeric ? DisabledIds : DisabledNames).insert(D);
  }
}

void FusionState::reserveIdsOf(const Graph &G) {
  for (const auto &N : G.nodes())
    if (isFusedGroup(*N))
      NextId = std::max(NextId, groupInfo(*N).Id + 1);
}

std::optional<std::string>
FusionState::disabledReason(int64_t Id, llvm::ArrayRef<Node *> Members) {
  std::optional<std::string> Why;
  if (DisabledIds.count(std::to_string(Id)))
    Why = "disabled by the user (--disable-fusion " + std::to_string(Id) + ")";
  for (Node *M : Members)
    if (!Why && !M->name().empty() && DisabledNames.count(M->name()))
      Why = "disabled by the user (--disable-fusion " + M->name() + ")";
  if (Why)
    for (Node *M : Members)
      Excluded.insert(memberName(*M));
  return Why;
}

bool FusionState::isExcluded(const Node &N) const {
  return Excluded.count(memberName(N)) ||
         (!N.name().empty() && DisabledNames.count(N.name()));
}

bool wouldCreateCycle(const llvm::DenseSet<const Node *> &Members) {
  // Walk forward from the members' results through non-members; reaching a
  // member again means a path leaves the set and re-enters it.
  llvm::SmallVector<const Node *, 16> Work;
  llvm::DenseSet<const Node *> Seen;
  auto PushUsers = [&](const Node *N) {
    for (const Value *R : N->results())
      if (R)
        for (const Use &U : R->uses())
          if (!Members.count(U.User) && Seen.insert(U.User).second)
            Work.push_back(U.User);
  };
  for (const Node *M : Members)
    PushUsers(M);
  while (!Work.empty()) {
    const Node *N = Work.pop_back_val();
    for (const Value *R : N->results())
      if (R)
        for (const Use &U : R->uses())
          if (Members.count(U.User))
            return true;
    PushUsers(N);
  }
  return false;
}

std::optional<std::vector<bool>> rowReductionAxes(const Node &N) {
  const Value *X = N.operand(0);
  if (!hasFusedRowKernel(N.kind()) || !X || !X->type().isStatic())
    return std::nullopt;
  int64_t Rank = X->type().rank();
  std::vector<bool> Mask(Rank, false);
  auto Norm = [&](int64_t A) -> std::optional<int64_t> {
    if (A < -Rank || A >= Rank)
      return std::nullopt;
    return A < 0 ? A + Rank : A;
  };
  switch (N.kind()) {
  case OpKind::ReduceMean:
  case OpKind::ReduceSum:
  case OpKind::ReduceMax: {
    const Value *Axes = N.operand(1);
    if (!Axes) {
      if (N.attrs().getInt("noop_with_empty_axes", 0))
        return std::nullopt;
      Mask.assign(Rank, true);
      return Mask;
    }
    if (!Axes->constant())
      return std::nullopt;
    for (int64_t A : Axes->constant()->toInt64Vector()) {
      auto D = Norm(A);
      if (!D)
        return std::nullopt;
      Mask[*D] = true;
    }
    return Mask;
  }
  case OpKind::Softmax:
  case OpKind::LogSoftmax: {
    auto D = Norm(N.attrs().getInt("axis", -1));
    if (!D)
      return std::nullopt;
    Mask[*D] = true;
    return Mask;
  }
  case OpKind::LayerNormalization:
  case OpKind::RMSNormalization: {
    auto D = Norm(N.attrs().getInt("axis", -1));
    if (!D)
      return std::nullopt;
    for (int64_t I = *D; I < Rank; ++I)
      Mask[I] = true;
    return Mask;
  }
  default:
    return std::nullopt;
  }
}

bool hasFusedRowKernel(OpKind K) {
  switch (K) {
  case OpKind::ReduceMean:
  case OpKind::ReduceSum:
  case OpKind::ReduceMax:
  case OpKind::Softmax:
  case OpKind::LogSoftmax:
  case OpKind::LayerNormalization:
  case OpKind::RMSNormalization:
    return true;
  default:
    return false;
  }
}

bool reducesInnermostDims(const std::vector<bool> &Mask) {
  size_t I = Mask.size();
  while (I > 0 && Mask[I - 1])
    --I;
  if (I == Mask.size())
    return false;
  return std::none_of(Mask.begin(), Mask.begin() + I, [](bool B) { return B; });
}

bool isLoopFusible(const Node &N) {
  if (isFusedGroup(N) || N.body())
    return false;
  const OpInfo &Info = getOpInfo(N.kind());
  if (!Info.ComposableIndexing)
    return false;
  for (const Value *R : N.results())
    if (R && !R->type().isStatic())
      return false;
  for (const Value *O : N.operands())
    if (O && !O->type().isStatic())
      return false;
  return true;
}

} // namespace solder
