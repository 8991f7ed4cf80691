//===- SharedLibrary.cpp - NVIDIA libraries opened on first use -----------===//
#include "codegen/SharedLibrary.h"

namespace solder {

llvm::Expected<llvm::sys::DynamicLibrary>
openSharedLibrary(llvm::StringRef Soname, llvm::ArrayRef<std::string> Dirs,
                  llvm::StringRef What) {
  std::string Err;
  auto Lib = llvm::sys::DynamicLibrary::getPermanentLibrary(
      Soname.str().c_str(), &Err);
  if (Lib.isValid())
    return Lib;
  std::string FirstErr = Err;
  for (const std::string &D : Dirs) {
    if (D.empty())
      continue;
    std::string Path = D + "/" + Soname.str();
    Lib = llvm::sys::DynamicLibrary::getPermanentLibrary(Path.c_str(), &Err);
    if (Lib.isValid())
      return Lib;
  }
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "cannot load " + Soname.str() + " (" +
                                     What.str() + "): " + FirstErr +
                                     "; add its folder to LD_LIBRARY_PATH");
}

} // namespace solder
