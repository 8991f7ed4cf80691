//===- PlanCache.h - Whole plans kept beside the kernel cache ---*- C++ -*-===//
//
// `solder compile` of a model it compiled before, with the same arguments,
// the same solder binary, NVRTC and environment, gives the plan file it
// gave then without compiling again or writing its bytes: the cache under
// <kernel cache>/plans/ holds each plan as a hard link to the file it was
// written as, and a hit links it to the new output (ccache's hard_link
// mode). A cached compile of ResNet-50 otherwise costs what writing its
// 97 MiB of weights costs, whatever the kernel cache saves.
//
// The key is the text of what the plan depends on (PlanCacheKey); the
// model and its external-data files enter it as hashes of their bytes. An
// entry is a plan file NAME.plan and a record NAME.key holding the key
// text, a hash of the plan's bytes and the command's summary; a hit needs
// the whole key text to match and the plan to hash as recorded, so a plan
// changed in place through an output it shares an inode with misses (and
// is replaced) instead of being served. Everything is best effort: a cache
// that cannot be read or written compiles as if it were empty.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TOOLS_PLANCACHE_H
#define SOLDER_TOOLS_PLANCACHE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace solder {

/// A hash of the file's bytes (hashed in slices over several threads), or
/// none when it cannot be read.
std::optional<std::string> hashFileBytes(llvm::StringRef Path);

/// What a compile's plan depends on. Args are the command's arguments
/// without the output file (`-o X`), the model path as given.
struct PlanCacheKey {
  std::string Text;
  /// 32 hex digits naming the entry (two hashes of Text).
  std::string Name;
};

/// The key of compiling Model (and the external-data files named by
/// ExternalLocations, beside it) with Args, for Arch (the architecture the
/// compile resolves), by this executable, with the NVRTC identity Nvrtc.
/// None when an ingredient cannot be read (an external-data location that
/// leaves the model's folder, a missing file): then the compile runs
/// uncached and reports what is wrong.
std::optional<PlanCacheKey>
planCacheKey(llvm::ArrayRef<std::string> Args, llvm::StringRef Model,
             llvm::ArrayRef<std::string> ExternalLocations,
             llvm::StringRef Arch, llvm::StringRef Nvrtc);

/// The arguments of `solder compile ...` (Argv, the whole command line)
/// that enter the key: all but the program and the output file. None when
/// the command line reads a response file (@file), whose content the key
/// cannot see.
std::optional<std::vector<std::string>>
planCacheArgs(llvm::ArrayRef<const char *> Argv);

class PlanCache {
public:
  /// Dir holds the entries (created when the first is stored). LimitBytes:
  /// storing evicts the least recently used plans beyond it.
  PlanCache(std::string Dir, uint64_t LimitBytes = DefaultLimitBytes);

  /// On a hit, Out is made the cached plan (renamed over atomically) and the
  /// summary stored with it is returned; otherwise nothing changes.
  std::optional<std::string> serve(const PlanCacheKey &Key,
                                   llvm::StringRef Out);
  /// Out was just written for Key: links it into the cache with Summary.
  /// Nothing happens where Out cannot be linked (another filesystem).
  void store(const PlanCacheKey &Key, llvm::StringRef Out,
             llvm::StringRef Summary);

  static constexpr uint64_t DefaultLimitBytes = uint64_t(4) << 30;

private:
  std::string path(const PlanCacheKey &Key, llvm::StringRef Ext) const;
  void evict(const std::string &Kept);

  std::string Dir;
  uint64_t LimitBytes;
};

} // namespace solder

#endif
