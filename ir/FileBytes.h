//===- FileBytes.h - Reading model, plan and tensor files -------*- C++ -*-===//
//
// Every file solder takes from the user (ONNX models, plans, tensors) is
// brought into memory here. Small files are read: a copy costs little and
// nothing can pull it away later (plans are always mapped: their weights
// are used in place, page-aligned). Large files are mapped, so weights go
// from the page cache to the plan file or the GPU without a host copy; a
// mapping's pages are read lazily, so a file truncated while mapped (say
// `cp other.onnx model.onnx`, which truncates in place) raises SIGBUS at
// the first access past its new end. That window, from the map to the
// last use of the weights, is the one left (docs/RELIABILITY.md);
// replacing files by rename, as solder's own writers do, never opens it:
// the mapping keeps the old file alive.
//
// Sizes are checked when the file is opened and again once it is read or
// mapped, so a file that changed size in between is refused, not read with
// a zero-filled or missing tail.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_IR_FILEBYTES_H
#define SOLDER_IR_FILEBYTES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include <cstdint>
#include <memory>
#include <string>

namespace solder {

/// Files up to this size are read into memory, larger ones mapped.
constexpr uint64_t DefaultMapAboveBytes = uint64_t(64) << 20;

/// The bytes of the regular file at Path (read when at most MapAbove
/// bytes, else mapped). What names the content in errors ("ONNX model").
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readFileBytes(llvm::StringRef Path, llvm::StringRef What,
              uint64_t MapAbove = DefaultMapAboveBytes);

/// "device inode size mtime.nanoseconds" of the file at Path, or "" when it
/// cannot be stat-ed: what identifies a build of a file (a library, an
/// executable) without reading it.
std::string fileStamp(llvm::StringRef Path);

} // namespace solder

#endif
