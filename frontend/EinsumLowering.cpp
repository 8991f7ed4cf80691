//===- EinsumLowering.cpp - Einsum as Transpose/Reshape/MatMul/ReduceSum --===//
//
// The Einsum equations exports produce (batched matmuls, inner and outer
// products, sums, transposes, with or without "...") are one or two
// operands without a repeated letter in a term. Such an Einsum is exactly:
//
//   each operand: ReduceSum over the letters only it has and the output
//   lacks;
//   one operand: Transpose to the output's order;
//   two operands: letters split into batch (both and the output), M (first
//   and output), N (second and output) and K (both, summed):
//     A -> Transpose (batch, M, K) -> Reshape [batch..., prod M, prod K]
//     B -> Transpose (batch, K, N) -> Reshape [batch..., prod K, prod N]
//     MatMul -> Reshape [batch..., M..., N...] -> Transpose to the output.
//
// One letter each for M, K and N needs no Reshape (nor does one operand),
// so symbolic dims are fine there; merging letters bakes static dims into
// the reshapes. A letter must have one size everywhere (no broadcasting of
// 1). A repeated letter in a term (a
// diagonal), three or more operands, or anything else is refused with the
// node and its equation.
//
//===----------------------------------------------------------------------===//
#include "frontend/NodeConverter.h"
#include "llvm/ADT/STLExtras.h"
#include <map>

namespace solder {
namespace onnximport {

static bool isIdentityPerm(llvm::ArrayRef<int64_t> Perm) {
  for (size_t I = 0; I < Perm.size(); ++I)
    if (Perm[I] != int64_t(I))
      return false;
  return true;
}

llvm::Expected<Value *> NodeConverter::arrange(Value *X,
                                               llvm::ArrayRef<int64_t> Perm,
                                               llvm::ArrayRef<int64_t> Dims,
                                               const std::string &Result) {
  Value *V = X;
  if (!isIdentityPerm(Perm)) {
    auto T = transposeTo(V, Perm);
    if (!T)
      return T.takeError();
    V = *T;
  }
  return reshapeTo(V, Dims, Result);
}

namespace {
/// One term's letters, its ellipsis spelled as the characters '0'... (one
/// per dim it covers, aligned to the right across terms).
llvm::Expected<std::string> expandTerm(llvm::StringRef Term, int64_t Rank,
                                       int64_t &EllipsisDims) {
  size_t At = Term.find("...");
  std::string Letters = Term.str();
  if (At == llvm::StringRef::npos) {
    if (int64_t(Letters.size()) != Rank)
      return makeError("term '" + Term + "' has " +
                       llvm::Twine(Letters.size()) +
                       " letters for an operand of rank " + llvm::Twine(Rank));
    return Letters;
  }
  int64_t Named = int64_t(Term.size()) - 3;
  EllipsisDims = Rank - Named;
  if (EllipsisDims < 0)
    return makeError("term '" + Term + "' has more letters than its rank");
  std::string E;
  for (int64_t I = 0; I < EllipsisDims; ++I)
    E += char('0' + (9 - (EllipsisDims - 1 - I))); // right-aligned
  return Term.substr(0, At).str() + E + Term.substr(At + 3).str();
}
} // namespace

llvm::Error NodeConverter::lowerEinsum() {
  AttributeProto *A = take("equation", AttributeProto::STRING);
  if (!Err.empty())
    return error(Err);
  if (!A)
    return error("has no 'equation' attribute");
  std::string Eq;
  for (char Ch : A->s())
    if (Ch != ' ')
      Eq += Ch;
  auto Refuse = [&](const llvm::Twine &Why) {
    return error("equation '" + A->s() + "': " + Why +
                 " (solder lowers Einsum without diagonals, of one or two "
                 "operands, with static dims)");
  };
  llvm::StringRef Lhs = Eq, Rhs;
  bool Arrow = Lhs.contains("->");
  if (Arrow)
    std::tie(Lhs, Rhs) = Lhs.split("->");
  llvm::SmallVector<llvm::StringRef, 2> Terms;
  Lhs.split(Terms, ',');
  if (Terms.size() != Operands.size())
    return Refuse(llvm::Twine(Terms.size()) + " terms for " +
                  llvm::Twine(Operands.size()) + " operands");
  if (Terms.size() > 2)
    return Refuse("more than two operands");
  std::vector<std::string> Letters;
  std::map<char, int64_t> Size;
  int64_t MaxEllipsis = 0;
  for (size_t T = 0; T < Terms.size(); ++T) {
    Value *X = Operands[T];
    if (!X)
      return Refuse("operand " + llvm::Twine(T) + " is absent");
    int64_t Ell = 0;
    auto L = expandTerm(Terms[T], X->type().rank(), Ell);
    if (!L)
      return Refuse(llvm::toString(L.takeError()));
    MaxEllipsis = std::max(MaxEllipsis, Ell);
    for (size_t I = 0; I < L->size(); ++I) {
      char Ch = (*L)[I];
      if (llvm::count(*L, Ch) > 1)
        return Refuse("a letter repeats within a term (a diagonal)");
      const Dim &XD = X->type().Dims[I];
      int64_t D = XD.isStatic() ? XD.size() : -1; // -1: symbolic
      if (D == 0) // Reshape would read a 0 as "copy the input's dim"
        return Refuse("an operand has a dim of size 0");
      auto [It, New] = Size.try_emplace(Ch, D);
      if (It->second < 0)
        It->second = D;
      else if (D >= 0 && It->second != D)
        return Refuse("a letter has sizes " + llvm::Twine(It->second) +
                      " and " + llvm::Twine(D));
    }
    Letters.push_back(*L);
  }
  std::string Ellipsis;
  for (int64_t I = 0; I < MaxEllipsis; ++I)
    Ellipsis += char('0' + (9 - (MaxEllipsis - 1 - I)));
  std::string OutL;
  if (Arrow) {
    size_t At = Rhs.find("...");
    OutL = At == llvm::StringRef::npos
               ? Rhs.str()
               : Rhs.substr(0, At).str() + Ellipsis + Rhs.substr(At + 3).str();
  } else {
    // Implicit output: the ellipsis, then the letters used once, sorted.
    std::string Once;
    for (auto &[Ch, D] : Size) {
      int Count = 0;
      for (const std::string &L : Letters)
        Count += llvm::count(L, Ch);
      if (Count == 1 && !(Ch >= '0' && Ch <= '9'))
        Once += Ch;
    }
    OutL = Ellipsis + Once;
  }
  for (char Ch : OutL)
    if (!Size.count(Ch) || llvm::count(OutL, Ch) > 1)
      return Refuse("the output's letters must be distinct input letters");
  std::vector<std::string> Results = resultNames();
  if (Results.size() != 1)
    return error("must have one output");
  std::vector<int64_t> OutDims;
  for (char Ch : OutL)
    OutDims.push_back(Size[Ch]);

  // Sum the letters only one operand has and the output lacks.
  std::vector<Value *> Vals(Operands.begin(), Operands.end());
  for (size_t T = 0; T < Letters.size(); ++T) {
    std::vector<int64_t> Axes;
    std::string Kept;
    for (size_t I = 0; I < Letters[T].size(); ++I) {
      char Ch = Letters[T][I];
      bool Elsewhere = OutL.find(Ch) != std::string::npos;
      for (size_t U = 0; U < Letters.size(); ++U)
        Elsewhere |= U != T && Letters[U].find(Ch) != std::string::npos;
      if (Elsewhere)
        Kept += Ch;
      else
        Axes.push_back(I);
    }
    if (Axes.empty())
      continue;
    Out.set("keepdims", int64_t(0));
    auto S = emitOne(OpKind::ReduceSum,
                     {Vals[T], C.constInt64s(base() + ".axes", Axes)});
    if (!S)
      return S.takeError();
    Vals[T] = *S;
    Letters[T] = Kept;
  }
  auto PermOf = [](const std::string &From, const std::string &To) {
    std::vector<int64_t> P;
    for (char Ch : To)
      P.push_back(From.find(Ch));
    return P;
  };
  // The result: V (letters From) transposed to the output's order.
  auto Finish = [&](Value *V, const std::string &From) -> llvm::Error {
    std::vector<int64_t> Perm = PermOf(From, OutL);
    bool Identity = isIdentityPerm(Perm);
    if (!Identity)
      Out.set("perm", Perm);
    auto Y = emitOne(Identity ? OpKind::Identity : OpKind::Transpose, {V},
                     Results[0]);
    return Y ? llvm::Error::success() : Y.takeError();
  };
  if (Letters.size() == 1)
    return Finish(Vals[0], Letters[0]);
  const std::string &LA = Letters[0], &LB = Letters[1];
  std::string Batch, M, N, K;
  for (char Ch : OutL) {
    bool InA = LA.find(Ch) != std::string::npos;
    bool InB = LB.find(Ch) != std::string::npos;
    (InA && InB ? Batch : InA ? M : N) += Ch;
  }
  for (char Ch : LA)
    if (LB.find(Ch) != std::string::npos && OutL.find(Ch) == std::string::npos)
      K += Ch;
  // One letter each for M, K and N (or no batch and one K and N: MatMul
  // broadcasts a 2-D B over A's leading dims) needs no Reshape, so
  // symbolic dims are fine.
  if (K.size() == 1 && N.size() == 1 &&
      (M.size() == 1 || (Batch.empty() && !M.empty()))) {
    auto Moved = [&](Value *V, const std::string &From,
                     const std::string &To) -> llvm::Expected<Value *> {
      std::vector<int64_t> Perm = PermOf(From, To);
      if (isIdentityPerm(Perm))
        return V;
      return transposeTo(V, Perm);
    };
    auto AT = Moved(Vals[0], LA, Batch + M + K);
    if (!AT)
      return AT.takeError();
    auto BT = Moved(Vals[1], LB, Batch + K + N);
    if (!BT)
      return BT.takeError();
    auto Mm = emitOne(OpKind::MatMul, {*AT, *BT});
    if (!Mm)
      return Mm.takeError();
    return Finish(*Mm, Batch + M + N);
  }
  for (auto &[Ch, D] : Size)
    if (D < 0)
      return Refuse("letter '" + std::string(1, Ch) +
                    "' has a symbolic size where the lowering must merge "
                    "letters with a Reshape");
  auto Prod = [&](const std::string &S) {
    int64_t P = 1;
    for (char Ch : S)
      P *= Size[Ch];
    return P;
  };
  std::vector<int64_t> BatchDims;
  for (char Ch : Batch)
    BatchDims.push_back(Size[Ch]);
  auto Dims3 = [&](int64_t R, int64_t Cc) {
    std::vector<int64_t> D = BatchDims;
    D.push_back(R);
    D.push_back(Cc);
    return D;
  };
  auto AM =
      arrange(Vals[0], PermOf(LA, Batch + M + K), Dims3(Prod(M), Prod(K)));
  if (!AM)
    return AM.takeError();
  auto BM =
      arrange(Vals[1], PermOf(LB, Batch + K + N), Dims3(Prod(K), Prod(N)));
  if (!BM)
    return BM.takeError();
  auto Mm = emitOne(OpKind::MatMul, {*AM, *BM});
  if (!Mm)
    return Mm.takeError();
  std::string Full = Batch + M + N;
  std::vector<int64_t> FullDims;
  for (char Ch : Full)
    FullDims.push_back(Size[Ch]);
  if (Full == OutL) {
    auto Y = reshapeTo(*Mm, OutDims, Results[0]);
    return Y ? llvm::Error::success() : Y.takeError();
  }
  auto Unflat = reshapeTo(*Mm, FullDims, "");
  if (!Unflat)
    return Unflat.takeError();
  auto Y = arrange(*Unflat, PermOf(Full, OutL), OutDims, Results[0]);
  return Y ? llvm::Error::success() : Y.takeError();
}

} // namespace onnximport
} // namespace solder
