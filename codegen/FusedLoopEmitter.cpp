//===- FusedLoopEmitter.cpp - One kernel for a loop group or an epilogue --===//
//
// Matches: a FusedGroup of kind loop (all its body nodes), or the nodes a
// contraction group's library call leaves over (LibraryEpilogue::Rest).
// Produces: one grid-stride kernel over the loop domain, the shape of the
// kernel's first result; every result must have that shape. Each thread
// computes one element of every result, walking back through the members
// (FusedValueEmitter): group operands are loaded once per coordinate they
// are read at, intermediates stay in registers, results are stored once.
//
//   %r = FusedGroup(%x, %b) {kind = "loop"} : f32[1,64,8,8]
//     %s = Add(%x, %b)       %b : f32[64,1,1]
//     %r = Relu(%s)
//
//   for (i ...) {
//     const float x = in0[i];
//     const float x1 = in1[(i / 64 % 64)];
//     const float t = (x + x1);
//     const float t1 = (fmaxf(t, (float)0));
//     out0[i] = t1;
//   }
//
// When every member is elementwise and every operand read has the domain's
// shape, the loop moves 16 bytes per access like ElementwiseEmitter.cpp.
// Leaves alone: which nodes form the group (the fusion passes) and what the
// library call absorbs (LibraryEpilogue.cpp).
//
//===----------------------------------------------------------------------===//
#include "codegen/FusedValueEmitter.h"
#include "ir/FusedGroup.h"
#include "ir/OpRegistry.h"

namespace solder {

using namespace codegen;

llvm::Expected<GeneratedKernel>
emitFusedKernel(const Node &Group, llvm::ArrayRef<const Node *> Nodes,
                const CodegenOptions &Opts, KernelNamer &Names) {
  if (!isFusedGroup(Group) || !Group.body())
    return makeError(Group.describe() + ": not a fused group");
  GroupInfo Info = groupInfo(Group);
  const Graph *Body = Group.body();
  if (Nodes.empty())
    return groupError(Group, nullptr, "no nodes to compute");
  llvm::DenseSet<const Node *> Computable(Nodes.begin(), Nodes.end());
  for (const Node *N : Nodes)
    if (N->graph() != Body)
      return groupError(Group, N, "internal: not a node of the group's body");

  // Results: the body outputs these nodes produce.
  std::vector<const Value *> OutBody, OutOuter;
  for (size_t J = 0; J < Body->outputs().size(); ++J) {
    const Value *V = Body->outputs()[J];
    if (V->producer() && Computable.count(V->producer())) {
      OutBody.push_back(V);
      OutOuter.push_back(Group.result(J));
    }
  }
  if (OutBody.empty())
    return groupError(Group, nullptr,
                      "the kernel's nodes compute none of the group's results");
  if (auto E = checkGroupStatic(Group, Nodes))
    return E;
  Dims Domain = dimsOf(OutBody[0]);
  for (const Value *V : OutBody)
    if (dimsOf(V) != Domain)
      return groupError(Group, nullptr,
                        "results '" + OutBody[0]->name() + "' (" +
                            typeToString(OutBody[0]->type()) + ") and '" +
                            V->name() + "' (" + typeToString(V->type()) +
                            ") have different shapes; a loop kernel needs "
                            "one domain");
  int64_t Count = numElementsOf(Domain);
  std::vector<const Value *> Reads = externalReads(Group, OutBody, Computable);

  bool IsEpilogue = Info.Kind == GroupKind::Contraction;
  std::string Role =
      IsEpilogue ? "contraction epilogue" : groupKindName(Info.Kind).str();
  CodegenOptions O = groupOptions(Group, Opts);
  KernelBuilder B(
      Group, O,
      Names.nameFor(Group, "g" + std::to_string(Info.Id) + "_" +
                               (IsEpilogue ? "epilogue"
                                           : groupKindName(Info.Kind).str())));
  CudaPrinter &P = B.p();
  std::vector<std::string> OutParams, InParams;
  for (const Value *V : OutOuter)
    OutParams.push_back(B.addOutput(V));
  std::vector<const Value *> InOuter;
  for (const Value *V : Reads) {
    InOuter.push_back(outerValue(Group, V));
    InParams.push_back(B.addInput(InOuter.back()));
  }
  std::vector<std::string> NodeNames;
  for (const Node *N : Nodes)
    NodeNames.push_back(memberName(*N));
  B.describeGroup(Info.Id, std::move(NodeNames),
                  groupSummary(Group, Role, Nodes, InOuter, OutOuter));
  bool Perturb = Opts.PerturbGroupId >= 0 && Opts.PerturbGroupId == Info.Id;

  // 16-byte accesses when each thread's element of every read is the
  // domain element itself: only elementwise members, every read of the
  // domain's shape, one element size.
  unsigned ElemSize = dtypeSize(OutBody[0]->dtype());
  bool Vector = O.Vectorize && Count > 0 && ElemSize >= 2;
  for (const Node *N : Nodes) {
    FusionKind F = getOpInfo(N->kind()).Fusion;
    Vector &= (F == FusionKind::Elementwise || F == FusionKind::Broadcast) &&
              N->kind() != OpKind::BatchNormalization;
    // A non-scalar constant is a table indexed by the element's position,
    // which the lane loop does not have.
    for (const Value *O : N->operands())
      Vector &= !O || !O->constant() || O->constant()->numElements() <= 1;
  }
  for (const Value *V : OutBody)
    Vector &= dtypeSize(V->dtype()) == ElemSize;
  for (const Value *V : Reads)
    Vector &= dtypeSize(V->dtype()) == ElemSize && dimsOf(V) == Domain;
  unsigned Lanes = Vector ? 16 / ElemSize : 1;
  Vector &= Count % Lanes == 0;

  if (auto E = [&]() -> llvm::Error {
        auto Kernel = B.beginKernel();
        FusedValueEmitter VE(B, Group, Nodes);
        if (Vector) {
          auto Loop = B.gridStrideLoop("v", Count / Lanes);
          for (size_t I = 0; I < Reads.size(); ++I) {
            std::string Raw = "raw" + std::to_string(I);
            std::string Ptr = "p" + std::to_string(I);
            std::string T = P.storageType(Reads[I]->dtype());
            P.line("const uint4 " + Raw +
                   " = reinterpret_cast<const uint4 *>(" + InParams[I] +
                   ")[v];");
            P.line("const " + T + " *" + Ptr + " = reinterpret_cast<const " +
                   T + " *>(&" + Raw + ");");
            VE.setParam(Reads[I], Ptr);
          }
          for (size_t R = 0; R < OutBody.size(); ++R) {
            std::string T = P.storageType(OutBody[R]->dtype());
            P.line("uint4 rawOut" + std::to_string(R) + ";");
            P.line(T + " *q" + std::to_string(R) + " = reinterpret_cast<" + T +
                   " *>(&rawOut" + std::to_string(R) + ");");
          }
          P.line("#pragma unroll");
          {
            auto Inner = P.scope("for (int k = 0; k < " +
                                 std::to_string(Lanes) + "; ++k)");
            // Every read is at the domain element, which is lane k of the
            // loaded vectors; the coordinates themselves are never printed
            // (only elementwise members, all reads of the domain's shape).
            Coords C;
            for (size_t D = 0; D < Domain.size(); ++D)
              C.push_back(Domain[D] == 1 ? "0"
                                         : "<lane" + std::to_string(D) + ">");
            VE.registerLinear(Domain, C, "k");
            if (auto E = VE.storeResults(OutBody, C, Perturb, [](size_t R) {
                  return "q" + std::to_string(R) + "[k]";
                }))
              return E;
          }
          for (size_t R = 0; R < OutParams.size(); ++R)
            P.line("reinterpret_cast<uint4 *>(" + OutParams[R] +
                   ")[v] = rawOut" + std::to_string(R) + ";");
        } else {
          auto Loop = B.gridStrideLoop("i", Count);
          for (size_t I = 0; I < Reads.size(); ++I)
            VE.setParam(Reads[I], InParams[I]);
          Coords C = VE.delinearize("i", Domain);
          if (auto E = VE.storeResults(OutBody, C, Perturb, [&](size_t R) {
                return OutParams[R] + "[i]";
              }))
            return E;
        }
        return llvm::Error::success();
      }())
    return std::move(E);
  GeneratedKernel K = B.finish();
  if (K.Source.find("<lane") != std::string::npos)
    return groupError(Group, nullptr,
                      "internal: a vectorized kernel used element coordinates");
  return K;
}

} // namespace solder
