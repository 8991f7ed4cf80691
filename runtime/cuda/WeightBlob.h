//===- WeightBlob.h - A plan's weights, without copies ----------*- C++ -*-===//
//
// The weights blob is every constant a plan reads, each at a 256-byte
// aligned offset. It is held as pieces that share the bytes of their source
// (IR constants, which view the mapped ONNX file; a mapped plan file), so
// building, writing and loading a plan never copy 100s of MB on the host:
// the bytes go from the page cache straight to the plan file or the GPU.
// The gaps between pieces are zeros.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_RUNTIME_CUDA_WEIGHTBLOB_H
#define SOLDER_RUNTIME_CUDA_WEIGHTBLOB_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace solder {

class WeightBlob {
public:
  struct Piece {
    uint64_t Offset = 0;
    llvm::StringRef Bytes;
    /// What keeps Bytes alive (null for none).
    std::shared_ptr<const void> Owner;
  };

  /// Places Bytes at the next 256-byte boundary and returns that offset.
  /// Owner keeps the bytes alive and unchanged for the blob's lifetime.
  uint64_t append(llvm::StringRef Bytes, std::shared_ptr<const void> Owner);
  /// Same, for bytes the blob copies and owns.
  uint64_t appendCopy(llvm::StringRef Bytes);

  uint64_t size() const { return Size; }
  bool empty() const { return Size == 0; }
  llvm::ArrayRef<Piece> pieces() const { return Pieces; }

  /// Calls Fn(StringRef) on consecutive chunks that together are the whole
  /// blob, gaps included (as zeros), in order.
  template <typename FnT> void forEachChunk(FnT Fn) const {
    static const char Zeros[256] = {};
    uint64_t At = 0;
    for (const Piece &P : Pieces) {
      while (At < P.Offset) {
        uint64_t N = std::min<uint64_t>(sizeof(Zeros), P.Offset - At);
        Fn(llvm::StringRef(Zeros, N));
        At += N;
      }
      Fn(P.Bytes);
      At += P.Bytes.size();
    }
  }
  /// The whole blob as one string (tests, small plans).
  std::string str() const;
  bool operator==(const WeightBlob &O) const { return str() == O.str(); }

private:
  std::vector<Piece> Pieces;
  uint64_t Size = 0;
};

} // namespace solder

#endif
