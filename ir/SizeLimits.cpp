//===- SizeLimits.cpp - Refusing tensors too large to be meant ------------===//
#include "ir/SizeLimits.h"
#include "ir/Graph.h"
#include "ir/OpRegistry.h"
#include <limits>

namespace solder {

uint64_t staticTypeBytes(const TensorType &T) {
  if (!T.isStatic())
    return 0;
  uint64_t Bytes = dtypeSize(T.Elem);
  for (const Dim &D : T.Dims) {
    uint64_t S = uint64_t(D.size());
    if (S && Bytes > std::numeric_limits<uint64_t>::max() / S)
      return std::numeric_limits<uint64_t>::max();
    Bytes *= S;
  }
  return Bytes;
}

static llvm::Error tooLarge(const llvm::Twine &What, const TensorType &T,
                            uint64_t Bytes, uint64_t MaxBytes) {
  return makeError(What + " is " + typeToString(T) + ", " + llvm::Twine(Bytes) +
                   " bytes, above the limit of " + llvm::Twine(MaxBytes) +
                   " bytes per tensor (--max-tensor-bytes)");
}

llvm::Error checkTensorSizes(const Graph &G, uint64_t MaxBytes) {
  for (const Value *In : G.inputs())
    if (uint64_t B = staticTypeBytes(In->type()); B > MaxBytes)
      return tooLarge("input '" + In->name() + "'", In->type(), B, MaxBytes);
  for (const auto &N : G.nodes()) {
    for (const Value *R : N->results())
      if (R)
        if (uint64_t B = staticTypeBytes(R->type()); B > MaxBytes)
          return tooLarge(N->describe() + ": result '" + R->name() + "'",
                          R->type(), B, MaxBytes);
    if (const Graph *Body = N->body())
      if (llvm::Error E = checkTensorSizes(*Body, MaxBytes))
        return E;
  }
  return llvm::Error::success();
}

} // namespace solder
