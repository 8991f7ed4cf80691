//===- ReferenceExecutor.cpp - Runs a Graph on the CPU ---------------------===//
#include "runtime/reference/ReferenceExecutor.h"
#include "ir/OpRegistry.h"
#include "runtime/reference/Kernels.h"
#include "llvm/ADT/DenseMap.h"

namespace solder {

static llvm::Error checkInput(const Value &V, const Tensor &T) {
  const TensorType &Ty = V.type();
  if (T.dtype() != Ty.Elem)
    return makeError("input '" + V.name() + "' expects " +
                     dtypeName(Ty.Elem) + ", got " + dtypeName(T.dtype()));
  if (T.rank() != Ty.rank())
    return makeError("input '" + V.name() + "' expects rank " +
                     llvm::Twine(Ty.rank()) + " (" + typeToString(Ty) +
                     "), got rank " + llvm::Twine(T.rank()));
  for (unsigned I = 0; I < Ty.rank(); ++I)
    if (Ty.Dims[I].isStatic() && Ty.Dims[I].size() != T.dims()[I])
      return makeError("input '" + V.name() + "' expects " +
                       typeToString(Ty) + ", got " +
                       typeToString(T.type()));
  return llvm::Error::success();
}

llvm::Expected<std::vector<Tensor>> runReference(const Graph &G,
                                                 llvm::ArrayRef<Tensor> Inputs) {
  if (Inputs.size() != G.inputs().size())
    return makeError("graph has " + llvm::Twine(G.inputs().size()) +
                     " inputs, " + llvm::Twine(Inputs.size()) + " given");
  llvm::DenseMap<const Value *, Tensor> Env;
  // Remaining uses per value, so intermediates are freed after the last one.
  llvm::DenseMap<const Value *, unsigned> Remaining;
  for (unsigned I = 0; I < Inputs.size(); ++I) {
    if (auto E = checkInput(*G.inputs()[I], Inputs[I]))
      return std::move(E);
    Env[G.inputs()[I]] = Inputs[I];
  }
  for (Value *C : G.constants())
    Env[C] = *C->constant();
  for (const auto &N : G.nodes())
    for (Value *O : N->operands())
      if (O)
        ++Remaining[O];
  for (Value *O : G.outputs())
    ++Remaining[O]; // outputs are never freed

  llvm::SmallVector<const Tensor *, 4> Ops;
  llvm::SmallVector<Tensor, 2> Results;
  for (const auto &N : G.nodes()) {
    Ops.clear();
    for (Value *O : N->operands()) {
      if (!O) {
        Ops.push_back(nullptr);
        continue;
      }
      auto It = Env.find(O);
      if (It == Env.end())
        return makeError(N->describe() + ": operand '" + O->name() +
                         "' has no value");
      Ops.push_back(&It->second);
    }
    if (auto E = ref::evaluateNode(*N, Ops, Results))
      return std::move(E);
    for (unsigned I = 0; I < N->numResults(); ++I) {
      Value *R = N->result(I);
      if (!R)
        continue;
      if (Results[I].isNull())
        return makeError(N->describe() + ": kernel produced no result " +
                         llvm::Twine(I));
      if (Results[I].dtype() != R->dtype())
        return makeError(N->describe() + ": kernel produced " +
                         dtypeName(Results[I].dtype()) + " for result '" +
                         R->name() + "' typed " + typeToString(R->type()));
      Env[R] = std::move(Results[I]);
    }
    for (Value *O : N->operands())
      if (O && --Remaining[O] == 0 && !O->isConstant() && !O->isGraphInput())
        Env.erase(O);
  }
  std::vector<Tensor> Out;
  for (Value *O : G.outputs()) {
    auto It = Env.find(O);
    if (It == Env.end())
      return makeError("output '" + O->name() + "' was not computed");
    Out.push_back(It->second);
  }
  return Out;
}

} // namespace solder
