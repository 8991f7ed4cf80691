//===- NvrtcIdentity.cpp - NVRTC's version without loading it -------------===//
#include "codegen/NvrtcIdentity.h"
#include "codegen/NvrtcApi.h"
#include "codegen/NvrtcCompiler.h"
#include "ir/FileBytes.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"
#include <cstdlib>
#include <dlfcn.h>
#include <sys/stat.h>

namespace solder {

namespace {

constexpr llvm::StringLiteral Magic = "solder-nvrtc-identity-v1";

std::string searchPath() {
  const char *P = std::getenv("LD_LIBRARY_PATH");
  return P ? P : "";
}

/// The record's text for a library at Path answering Version.
std::string recordText(const std::string &Path, const std::string &Version) {
  return (Magic + "\n" + Path + "\n" + fileStamp(Path) + "\n" + searchPath() +
          "\n" + Version + "\n")
      .str();
}

/// The version the record at File gives, or "" when it is missing, malformed
/// or no longer describes the library and the search path.
std::string readRecord(const std::string &File) {
  auto Buf = readFileBytes(File, "NVRTC identity record", UINT64_MAX);
  if (!Buf) {
    llvm::consumeError(Buf.takeError());
    return "";
  }
  llvm::SmallVector<llvm::StringRef, 6> Lines;
  (*Buf)->getBuffer().split(Lines, '\n');
  // Magic, path, stamp, search path, version, and the final newline's "".
  if (Lines.size() != 6 || Lines[0] != Magic || !Lines[5].empty() ||
      Lines[4].empty())
    return "";
  std::string Path = Lines[1].str();
  std::string Stamp = fileStamp(Path);
  if (Stamp.empty() || Stamp != Lines[2] || Lines[3] != searchPath())
    return "";
  return Lines[4].str();
}

/// The file NVRTC was loaded from, or "" when the loader does not say.
std::string loadedFrom(const NvrtcApi &N) {
  Dl_info Info;
  if (!::dladdr(reinterpret_cast<void *>(N.nvrtcVersion), &Info) ||
      !Info.dli_fname)
    return "";
  return Info.dli_fname;
}

} // namespace

std::string nvrtcVersionFor(llvm::StringRef CacheDir) {
  std::string File =
      CacheDir.empty() ? "" : (CacheDir + "/" + NvrtcIdentityFile).str();
  if (!File.empty()) {
    std::string Recorded = readRecord(File);
    if (!Recorded.empty())
      return Recorded;
  }
  std::string Version = nvrtcVersionString();
  auto N = nvrtcApi();
  if (!N) {
    llvm::consumeError(N.takeError());
    return Version;
  }
  std::string Path = loadedFrom(**N);
  // A failed write only means asking NVRTC again next time.
  if (!File.empty() && Version != "unknown" && !fileStamp(Path).empty())
    llvm::consumeError(
        writeCacheFileAtomically(File, recordText(Path, Version)));
  return Version;
}

} // namespace solder
