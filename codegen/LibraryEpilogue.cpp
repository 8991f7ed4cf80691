//===- LibraryEpilogue.cpp - What a library call absorbs of a group -------===//
#include "codegen/LibraryEpilogue.h"
#include "ir/OpRegistry.h"

namespace solder {

LibraryEpilogue matchLibraryEpilogue(const Node &Group) {
  LibraryEpilogue E;
  const Graph *Body = Group.body();
  if (!Body)
    return E;
  for (const auto &N : Body->nodes()) {
    if (!E.Anchor && getOpInfo(N->kind()).Fusion == FusionKind::Contraction) {
      E.Anchor = N.get();
      E.LibraryResult = N->result(0);
      continue;
    }
    E.Rest.push_back(N.get());
  }
  E.Description = E.Anchor ? E.Anchor->opName().str() : "?";
  return E;
}

} // namespace solder
