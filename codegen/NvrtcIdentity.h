//===- NvrtcIdentity.h - NVRTC's version without loading it -----*- C++ -*-===//
//
// The kernel cache keys every cubin by NVRTC's version. Loading NVRTC (a
// 100 MB library: relocations, initialisation, unmapping at exit) only to
// ask it took about 4 ms of a 38 ms cached compile of ResNet-50, where no
// kernel needs compiling. So the cache folder keeps a record of which
// library file answered which version; while that file (same path, device,
// inode, size and modification time) and LD_LIBRARY_PATH are unchanged, the
// version is read back instead of asked.
//
// What it still misses: a second libnvrtc.so.13 put earlier on the loader's
// search path (the ld.so cache, say) while the recorded one stays. Cubins
// of the old version are then found under keys it named; they are valid
// code for the architecture, only not what the new compiler would emit.
// Deleting the record (or the cache) makes the next compile ask again.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_CODEGEN_NVRTCIDENTITY_H
#define SOLDER_CODEGEN_NVRTCIDENTITY_H

#include "llvm/ADT/StringRef.h"
#include <string>

namespace solder {

/// The record's file name inside a kernel cache folder.
inline constexpr const char *NvrtcIdentityFile = "nvrtc-identity.txt";

/// NVRTC's version ("13.0") as nvrtcVersionString() gives it, read from
/// CacheDir's record when it still describes the library NVRTC was loaded
/// from, else asked of NVRTC (loading it) and recorded in CacheDir. An
/// empty CacheDir asks every time. "unavailable" when NVRTC cannot be
/// loaded (then no record is written).
std::string nvrtcVersionFor(llvm::StringRef CacheDir);

} // namespace solder

#endif
