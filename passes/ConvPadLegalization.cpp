//===- ConvPadLegalization.cpp - Explicit, symmetric conv pads
//-------------===//
#include "passes/ConvPadLegalization.h"
#include "ir/Layout.h"
#include "ir/ConvPads.h"
#include "ir/OpRegistry.h"
#include <algorithm>
#include <vector>

namespace solder {

namespace {
Value *i64Constant(Graph &G, llvm::StringRef Base,
                   llvm::ArrayRef<int64_t> Values) {
  return G.addConstant(G.uniqueName(Base), Tensor::fromInt64s(Values));
}

/// [0, 0, B0, B1..., 0, 0, E0, E1...] for Pad over N x C x spatial.
std::vector<int64_t> fullPads(llvm::ArrayRef<int64_t> B,
                              llvm::ArrayRef<int64_t> E) {
  std::vector<int64_t> P = {0, 0};
  P.insert(P.end(), B.begin(), B.end());
  P.push_back(0);
  P.push_back(0);
  P.insert(P.end(), E.begin(), E.end());
  return P;
}

llvm::Expected<Decision> legalizeConv(Graph &G, Node &N) {
  const TensorType &X = N.operand(0)->type(), &W = N.operand(1)->type();
  llvm::SmallVector<int64_t, 4> XD = X.staticDims(), WD = W.staticDims();
  llvm::ArrayRef<int64_t> In = llvm::ArrayRef<int64_t>(XD).drop_front(2);
  llvm::ArrayRef<int64_t> K = llvm::ArrayRef<int64_t>(WD).drop_front(2);
  ConvPads P = effectiveConvPads(N, In, K, /*Out=*/{});
  std::vector<int64_t> Sym, ExtraB, ExtraE;
  for (size_t I = 0; I < In.size(); ++I) {
    int64_t M = std::min(P.Begin[I], P.End[I]);
    Sym.push_back(M);
    ExtraB.push_back(P.Begin[I] - M);
    ExtraE.push_back(P.End[I] - M);
  }
  bool HadAuto = N.attrs().getString("auto_pad", "NOTSET") != "NOTSET";
  if (P.symmetric() && !HadAuto)
    return Decision::no("pads are explicit and symmetric");
  if (!P.symmetric()) {
    auto Pos = G.iteratorOf(&N);
    Node *PadN = G.insertNode(
        Pos, OpKind::Pad,
        {N.operand(0), i64Constant(G, N.result(0)->name() + ".pads",
                                   fullPads(ExtraB, ExtraE))},
        {G.uniqueName(N.result(0)->name() + ".padded")}, N.name());
    PadN->attrs().set("mode", "constant");
    if (auto E = inferNodeTypes(*PadN))
      return std::move(E);
    N.setOperand(0, PadN->result(0));
  }
  std::vector<int64_t> Both = Sym;
  Both.insert(Both.end(), Sym.begin(), Sym.end());
  N.attrs().erase("auto_pad");
  N.attrs().set("pads", Both);
  if (auto E = inferNodeTypes(N))
    return std::move(E);
  return Decision::yes();
}

llvm::Expected<Decision> legalizeConvTranspose(Graph &G, Node &N) {
  const TensorType &X = N.operand(0)->type(), &W = N.operand(1)->type();
  Value *Y = N.result(0);
  llvm::SmallVector<int64_t, 4> XD = X.staticDims(), WD = W.staticDims(),
                                YD = Y->type().staticDims();
  llvm::ArrayRef<int64_t> In = llvm::ArrayRef<int64_t>(XD).drop_front(2);
  llvm::ArrayRef<int64_t> K = llvm::ArrayRef<int64_t>(WD).drop_front(2);
  llvm::ArrayRef<int64_t> Out = llvm::ArrayRef<int64_t>(YD).drop_front(2);
  ConvPads P = effectiveConvPads(N, In, K, Out);
  // Crop/extend of the unpadded result (size S*(In-1) + KEff, without the
  // output_padding rows): Begin off the start, OutputPadding - End past
  // its end.
  std::vector<int64_t> OutPad = N.attrs().getInts("output_padding");
  OutPad.resize(In.size(), 0);
  std::vector<int64_t> CropBegin, CropEnd;
  for (size_t I = 0; I < In.size(); ++I) {
    CropBegin.push_back(-P.Begin[I]);
    CropEnd.push_back(OutPad[I] - P.End[I]);
  }
  bool Plain = N.attrs().getString("auto_pad", "NOTSET") == "NOTSET" &&
               !N.attrs().has("output_shape");
  bool NoOutPad = true;
  for (int64_t V : N.attrs().getInts("output_padding"))
    NoOutPad &= V == 0;
  if (Plain && NoOutPad && P.symmetric())
    return Decision::no("pads are explicit and symmetric");
  // The unpadded transposed convolution, then crop/extend, then the bias.
  std::string Base = Y->name();
  Value *Bias = N.operand(2);
  N.setOperand(2, nullptr);
  for (const char *A : {"auto_pad", "output_shape", "output_padding"})
    N.attrs().erase(A);
  N.attrs().set("pads", std::vector<int64_t>(2 * In.size(), 0));
  auto After = std::next(G.iteratorOf(&N));
  std::string FullName = G.uniqueName(Base + ".unpadded");
  G.renameValue(Y, FullName);
  Node *PadN = G.insertNode(
      After, OpKind::Pad,
      {Y, i64Constant(G, Base + ".crop", fullPads(CropBegin, CropEnd))},
      {Bias ? G.uniqueName(Base + ".nobias") : Base}, N.name());
  PadN->attrs().set("mode", "constant");
  Value *Result = PadN->result(0);
  Node *Last = PadN;
  if (Bias) {
    // Bias [C] broadcasts over N x C x spatial as [C, 1, ...].
    llvm::SmallVector<int64_t, 4> BD = {Bias->type().staticDims()[0]};
    BD.append(In.size(), 1);
    Value *Shape = i64Constant(G, Base + ".bias_shape", BD);
    Node *R =
        G.insertNode(std::next(G.iteratorOf(PadN)), OpKind::Reshape,
                     {Bias, Shape}, {G.uniqueName(Base + ".bias")}, N.name());
    if (auto E = inferNodeTypes(*R))
      return std::move(E);
    Last = G.insertNode(std::next(G.iteratorOf(R)), OpKind::Add,
                        {Result, R->result(0)}, {Base}, N.name());
  }
  // Point the old users and outputs at the new result.
  if (auto E = inferNodeTypes(N))
    return std::move(E);
  if (auto E = inferNodeTypes(*PadN))
    return std::move(E);
  if (Last != PadN)
    if (auto E = inferNodeTypes(*Last))
      return std::move(E);
  Value *Final = Last->result(0);
  llvm::SmallVector<Use, 4> Uses(Y->uses().begin(), Y->uses().end());
  for (const Use &U : Uses)
    if (U.User != PadN)
      U.User->setOperand(U.OperandIndex, Final);
  for (unsigned I = 0; I < G.outputs().size(); ++I)
    if (G.outputs()[I] == Y)
      G.setOutput(I, Final);
  return Decision::yes();
}
} // namespace

llvm::Expected<bool> ConvPadLegalization::run(Graph &G, DecisionLog &Log) {
  return rewriteMatching(
      G, Log,
      [](const Node &N) {
        // An NHWC conv (from IR text; conv-layout runs later) keeps its
        // pads: the plan builder names it if cuDNN cannot take them.
        return (N.kind() == OpKind::Conv ||
                N.kind() == OpKind::ConvTranspose) &&
               !isNhwc(N) &&
               N.operand(0)->type().isStatic() &&
               N.operand(1)->type().isStatic() &&
               N.result(0)->type().isStatic();
      },
      [&G](Node &N) {
        return N.kind() == OpKind::Conv ? legalizeConv(G, N)
                                        : legalizeConvTranspose(G, N);
      });
}

} // namespace solder
