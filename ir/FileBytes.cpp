//===- FileBytes.cpp - Reading model, plan and tensor files ---------------===//
#include "ir/FileBytes.h"
#include "llvm/Support/FileSystem.h"
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace solder {

static llvm::Error fileError(const llvm::Twine &Msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), Msg);
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readFileBytes(llvm::StringRef Path, llvm::StringRef What, uint64_t MapAbove) {
  int FD = ::open(Path.str().c_str(), O_RDONLY | O_CLOEXEC);
  if (FD < 0)
    return fileError("cannot open " + What + " '" + Path +
                     "': " + std::strerror(errno));
  struct stat St;
  if (::fstat(FD, &St) != 0 || !S_ISREG(St.st_mode)) {
    ::close(FD);
    return fileError("'" + Path + "' is not a regular file");
  }
  uint64_t Size = uint64_t(St.st_size);
  // LLVM reads instead of mapping only for a volatile file that needs a
  // null terminator (IsVolatile alone is ignored); the terminator is one
  // byte past the buffer.
  bool Read = Size <= MapAbove;
  auto Buf = llvm::MemoryBuffer::getOpenFile(
      llvm::sys::fs::convertFDToNativeFile(FD), Path, Size,
      /*RequiresNullTerminator=*/Read, /*IsVolatile=*/Read);
  // A read stops early at a shrunk end and zero-fills the rest; a mapping
  // made after a truncation would fault. Either way the size now differs.
  bool Changed = ::fstat(FD, &St) != 0 || uint64_t(St.st_size) != Size;
  ::close(FD);
  if (!Buf)
    return fileError("cannot read " + What + " '" + Path +
                     "': " + Buf.getError().message());
  if (Changed)
    return fileError(What + " '" + Path + "' changed size while being read (" +
                     llvm::Twine(Size) + " bytes when opened)");
  return std::move(*Buf);
}

std::string fileStamp(llvm::StringRef Path) {
  struct stat St;
  if (Path.empty() || ::stat(Path.str().c_str(), &St) != 0)
    return "";
  return std::to_string(uint64_t(St.st_dev)) + " " +
         std::to_string(uint64_t(St.st_ino)) + " " +
         std::to_string(int64_t(St.st_size)) + " " +
         std::to_string(int64_t(St.st_mtim.tv_sec)) + "." +
         std::to_string(int64_t(St.st_mtim.tv_nsec));
}

} // namespace solder
