//===- HorizontalMatMulFusion.cpp - Sibling matmuls become one ------------===//
#include "passes/HorizontalMatMulFusion.h"
#include "ir/OpRegistry.h"
#include "passes/PatternMatch.h"
#include "passes/PrecisionConversion.h"
#include "passes/Slices.h"
#include <cstring>
#include <map>
#include <tuple>
#include <vector>

namespace solder {

namespace {

/// One MatMul of the candidate set, and its bias Add (or null).
struct Member {
  Node *MatMul = nullptr;
  Node *BiasAdd = nullptr;
  const Value *Bias = nullptr;
  int64_t N = 0;
};

/// The bias constant of Add when it adds a vector of N values along the
/// last axis of the MatMul result R (and keeps R's type).
const Value *biasVector(const Node &Add, const Value *R, int64_t N) {
  if (Add.kind() != OpKind::Add || Add.numOperands() != 2 || !Add.result(0) ||
      Add.result(0)->type() != R->type())
    return nullptr;
  const Value *B = otherOperand(Add, R);
  if (!B || !B->isConstant() || B->dtype() != R->dtype())
    return nullptr;
  auto D = B->type().staticDims();
  if (D.empty() || D.back() != N)
    return nullptr;
  for (size_t I = 0; I + 1 < D.size(); ++I)
    if (D[I] != 1)
      return nullptr;
  return D.size() <= R->type().rank() ? B : nullptr;
}

/// The MatMul U reading X as a candidate, or nullopt.
std::optional<Member> candidate(const Graph &G, const FusionState &State,
                                Node &U, const Value *X) {
  if (U.kind() != OpKind::MatMul || U.operand(0) != X || U.operand(1) == X ||
      State.isExcluded(U))
    return std::nullopt;
  const Value *W = U.operand(1), *R = U.result(0);
  if (!W->isConstant() || W->type().rank() != 2 || !R ||
      !R->type().isStatic() || R->type().rank() < 2 || !isFloat(R->dtype()) ||
      W->dtype() != R->dtype())
    return std::nullopt;
  Member M;
  M.MatMul = &U;
  M.N = W->type().staticDims()[1];
  if (Node *Add = soleUser(G, R))
    if (const Value *B = biasVector(*Add, R, M.N))
      if (!State.isExcluded(*Add)) {
        M.BiasAdd = Add;
        M.Bias = B;
      }
  return M;
}

/// Concatenates 2-D [K, N_i] (or 1-D [N_i]) constants along their last
/// axis. Bytes are moved as they lie (a misaligned weight of the mapped
/// model is not first copied to aligned storage) into storage that is not
/// zero-filled first: every byte is written below. BERT-base packs 85 MB
/// per compile.
Tensor concatLast(llvm::ArrayRef<const Tensor *> Parts) {
  const Tensor &First = *Parts.front();
  int64_t Rows = First.rank() == 2 ? First.dims()[0] : 1, Total = 0;
  for (const Tensor *P : Parts)
    Total += P->dims().back();
  llvm::SmallVector<int64_t, 2> Dims;
  if (First.rank() == 2)
    Dims.push_back(Rows);
  Dims.push_back(Total);
  Tensor Out = Tensor::uninitialized(First.dtype(), Dims);
  size_t Elem = dtypeSize(First.dtype());
  auto *Dst = static_cast<char *>(Out.mutableRawData());
  std::vector<const char *> Srcs;
  for (const Tensor *P : Parts)
    Srcs.push_back(P->bytes().data());
  auto CopyRows = [&](int64_t Begin, int64_t End) {
    int64_t Col = 0;
    for (size_t I = 0; I < Parts.size(); ++I) {
      int64_t N = Parts[I]->dims().back();
      for (int64_t R = Begin; R < End; ++R)
        std::memcpy(Dst + (R * Total + Col) * Elem, Srcs[I] + R * N * Elem,
                    N * Elem);
      Col += N;
    }
  };
  // Slices of rows on several threads when large: the copy is mostly first
  // touches of new and mapped pages, which threads take in parallel (7 MB a
  // layer for BERT-base: 49 -> 21 ms for its 12 layers on 2 cores).
  forEachSlice(Rows,
               Out.byteSize() < (4u << 20)
                   ? 1
                   : hardwareThreads(std::min<int64_t>(8, Rows)),
               CopyRows);
  return Out;
}

/// concatLast(Parts), through Weights when set.
std::shared_ptr<const Tensor> packed(ReducedWeightCache *Weights,
                                     llvm::StringRef Tag,
                                     llvm::ArrayRef<const Tensor *> Parts) {
  if (!Weights)
    return std::make_shared<const Tensor>(concatLast(Parts));
  return Weights->derived(Tag, Parts, [&] { return concatLast(Parts); });
}

llvm::Expected<bool> fuseMembers(Graph &G, llvm::ArrayRef<Member> Ms,
                                 ReducedWeightCache *Weights,
                                 DecisionLog &Log) {
  Node *First = Ms.front().MatMul;
  bool HasBias = Ms.front().BiasAdd != nullptr;
  Value *X = First->operand(0);
  std::vector<const Tensor *> Ws, Bs;
  std::string Name;
  for (const Member &M : Ms) {
    Ws.push_back(M.MatMul->operand(1)->constant());
    if (HasBias) {
      // A [1, N] bias goes in as its N values.
      Bs.push_back(M.Bias->constant());
    }
    Name += (Name.empty() ? "" : "+") + memberName(*M.MatMul);
  }
  Value *W = G.addConstant(G.uniqueName(X->name() + ".packed_weight"),
                           packed(Weights, "packed weight", Ws));
  auto Pos = G.iteratorOf(First);
  Node *MM = G.insertNode(Pos, OpKind::MatMul, {X, W},
                          {G.uniqueName(X->name() + ".packed")}, Name);
  if (llvm::Error E = inferNodeTypes(*MM))
    return std::move(E);
  Value *Packed = MM->result(0);
  if (HasBias) {
    std::vector<Tensor> Flat;
    for (const Tensor *B : Bs)
      Flat.push_back(B->reshaped({B->dims().back()}));
    std::vector<const Tensor *> FlatPtrs;
    for (const Tensor &T : Flat)
      FlatPtrs.push_back(&T);
    Value *B = G.addConstant(G.uniqueName(X->name() + ".packed_bias"),
                             packed(Weights, "packed bias", FlatPtrs));
    std::string AddName;
    for (const Member &M : Ms)
      AddName += (AddName.empty() ? "" : "+") + memberName(*M.BiasAdd);
    Node *Add =
        G.insertNode(Pos, OpKind::Add, {Packed, B},
                     {G.uniqueName(Packed->name() + ".biased")}, AddName);
    if (llvm::Error E = inferNodeTypes(*Add))
      return std::move(E);
    Packed = Add->result(0);
  }
  int64_t Axis = Packed->type().rank() - 1, Offset = 0;
  Value *Axes =
      G.addConstant(G.uniqueName("packed_axes"), Tensor::fromInt64s({Axis}));
  for (const Member &M : Ms) {
    Value *Old = HasBias ? M.BiasAdd->result(0) : M.MatMul->result(0);
    Value *Starts = G.addConstant(G.uniqueName("packed_start"),
                                  Tensor::fromInt64s({Offset}));
    Value *Ends = G.addConstant(G.uniqueName("packed_end"),
                                Tensor::fromInt64s({Offset + M.N}));
    Node *S =
        G.insertNode(Pos, OpKind::Slice, {Packed, Starts, Ends, Axes},
                     {G.uniqueName(Old->name() + ".slice")},
                     memberName(HasBias ? *M.BiasAdd : *M.MatMul) + "/slice");
    if (llvm::Error E = inferNodeTypes(*S))
      return std::move(E);
    replaceKeepingName(G, Old, S->result(0));
    Offset += M.N;
  }
  std::vector<Node *> Dead;
  for (const Member &M : Ms) {
    if (M.BiasAdd)
      Dead.push_back(M.BiasAdd);
    Dead.push_back(M.MatMul);
  }
  Decision D = Decision::yes();
  D.Reason = std::to_string(Ms.size()) + " matmuls of '" + X->name() +
             "' packed into one of N = " + std::to_string(Offset) +
             (HasBias ? " with their biases" : "");
  Log.note(*MM, D);
  eraseIfDead(G, Dead);
  return true;
}

} // namespace

llvm::Expected<bool> HorizontalMatMulFusion::run(Graph &G, DecisionLog &Log) {
  // Candidate sets, keyed by the shared activation and what must agree.
  using Key = std::tuple<const Value *, int64_t, DType, bool>;
  std::map<Key, std::vector<Member>> Sets;
  std::vector<Key> Order;
  for (auto &N : G.nodes()) {
    if (N->kind() != OpKind::MatMul || !N->operand(0))
      continue;
    const Value *X = N->operand(0);
    auto M = candidate(G, State, *N, X);
    if (!M)
      continue;
    Key K{X, M->MatMul->operand(1)->type().staticDims()[0],
          M->MatMul->result(0)->dtype(), M->BiasAdd != nullptr};
    auto [It, New] = Sets.try_emplace(K);
    if (New)
      Order.push_back(K);
    It->second.push_back(*M);
  }
  bool Changed = false;
  for (const Key &K : Order) {
    const std::vector<Member> &Ms = Sets[K];
    if (Ms.size() < 2)
      continue;
    auto C = fuseMembers(G, Ms, Weights, Log);
    if (!C)
      return C.takeError();
    Changed |= *C;
  }
  if (Changed)
    G.removeUnusedConstants();
  return Changed;
}

} // namespace solder
