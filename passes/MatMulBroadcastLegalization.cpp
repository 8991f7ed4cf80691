//===- MatMulBroadcastLegalization.cpp - Strided-batch MatMuls ------------===//
#include "passes/MatMulBroadcastLegalization.h"
#include "ir/OpRegistry.h"
#include <algorithm>

namespace solder {

namespace {

/// Batch dims of a matrix operand, left-padded with 1s to Rank.
llvm::SmallVector<int64_t, 4> paddedBatch(llvm::ArrayRef<int64_t> Dims,
                                          size_t Rank) {
  llvm::SmallVector<int64_t, 4> B(Rank, 1);
  size_t N = Dims.size() - 2;
  std::copy(Dims.begin(), Dims.begin() + N, B.begin() + (Rank - N));
  return B;
}

bool allOnes(llvm::ArrayRef<int64_t> Dims) {
  return llvm::all_of(Dims, [](int64_t D) { return D == 1; });
}

llvm::Expected<Decision> legalize(Graph &G, Node &N) {
  llvm::SmallVector<int64_t, 4> AD = N.operand(0)->type().staticDims();
  llvm::SmallVector<int64_t, 4> BD = N.operand(1)->type().staticDims();
  if (AD.size() < 2 || BD.size() < 2)
    return Decision::no("a 1-D operand has no batch dims");
  size_t Rank = std::max(AD.size(), BD.size()) - 2;
  auto AB = paddedBatch(AD, Rank), BB = paddedBatch(BD, Rank);
  llvm::SmallVector<int64_t, 4> Out(Rank);
  for (size_t I = 0; I < Rank; ++I)
    Out[I] = std::max(AB[I], BB[I]);
  bool Changed = false;
  for (unsigned Op = 0; Op < 2; ++Op) {
    auto &Batch = Op == 0 ? AB : BB;
    auto &Dims = Op == 0 ? AD : BD;
    if (allOnes(Batch) || Batch == Out)
      continue;
    llvm::SmallVector<int64_t, 4> Shape(Out.begin(), Out.end());
    Shape.append(Dims.end() - 2, Dims.end());
    Value *X = N.operand(Op);
    std::string Base = X->name() + ".batched";
    Value *ShapeC =
        G.addConstant(G.uniqueName(Base + ".shape"), Tensor::fromInt64s(Shape));
    Node *E = G.insertNode(G.iteratorOf(&N), OpKind::Expand, {X, ShapeC},
                           {G.uniqueName(Base)}, N.name());
    if (llvm::Error Err = inferNodeTypes(*E))
      return std::move(Err);
    N.setOperand(Op, E->result(0));
    Changed = true;
  }
  if (!Changed)
    return Decision::no("each operand is fully batched or not batched");
  return Decision::yes();
}

} // namespace

llvm::Expected<bool> MatMulBroadcastLegalization::run(Graph &G,
                                                      DecisionLog &Log) {
  return rewriteMatching(
      G, Log,
      [](const Node &N) {
        return N.kind() == OpKind::MatMul && N.operand(0)->type().isStatic() &&
               N.operand(1)->type().isStatic();
      },
      [&G](Node &N) { return legalize(G, N); });
}

} // namespace solder
