//===- FusedGroupKernel.cpp - A fused group runs its body -----------------===//
//
// The reference executor runs a FusedGroup by running its unfused body on
// the group's operands, so a fused graph and its unfused original are the
// same computation on the CPU by construction.
//
//===----------------------------------------------------------------------===//
#include "runtime/reference/Kernels.h"
#include "runtime/reference/ReferenceExecutor.h"

namespace solder {
namespace ref {

llvm::Error evalFusedGroup(KernelContext &Ctx) {
  const Graph *Body = Ctx.N.body();
  if (!Body)
    return Ctx.error("fused group has no body");
  std::vector<Tensor> Ins;
  for (unsigned I = 0; I < Ctx.numIn(); ++I) {
    if (!Ctx.in(I))
      return Ctx.error("operand " + llvm::Twine(I) + " is absent");
    Ins.push_back(*Ctx.in(I));
  }
  llvm::Expected<std::vector<Tensor>> Outs = runReference(*Body, Ins);
  if (!Outs)
    return Ctx.error("in its body: " + llvm::toString(Outs.takeError()));
  if (Outs->size() != Ctx.Results.size())
    return Ctx.error("body produced " + llvm::Twine(Outs->size()) +
                     " results for " + llvm::Twine(Ctx.Results.size()));
  for (size_t I = 0; I < Outs->size(); ++I)
    Ctx.Results[I] = std::move((*Outs)[I]);
  return llvm::Error::success();
}

} // namespace ref
} // namespace solder
