//===- WeightBlob.cpp - A plan's weights, without copies ------------------===//
#include "runtime/cuda/WeightBlob.h"

namespace solder {

uint64_t WeightBlob::append(llvm::StringRef Bytes,
                            std::shared_ptr<const void> Owner) {
  uint64_t Offset = (Size + 255) / 256 * 256;
  Pieces.push_back({Offset, Bytes, std::move(Owner)});
  Size = Offset + Bytes.size();
  return Offset;
}

uint64_t WeightBlob::appendCopy(llvm::StringRef Bytes) {
  auto Copy = std::make_shared<std::string>(Bytes.str());
  llvm::StringRef Held = *Copy;
  return append(Held, std::move(Copy));
}

std::string WeightBlob::str() const {
  std::string Out;
  Out.reserve(Size);
  forEachChunk([&](llvm::StringRef C) { Out.append(C.data(), C.size()); });
  return Out;
}

} // namespace solder
