//===- SharedLibrary.h - NVIDIA libraries opened on first use ---*- C++ -*-===//
//
// NVRTC, cuBLASLt and cuDNN are opened with dlopen when a command first
// needs them, not linked: loading cuBLASLt alone (hundreds of MB, ~0.5M
// relocations) cost ~80 ms at every process start, and a binary linked
// against them would not start where they are missing. A missing library
// is an error naming it, never a crash.
//
// The loader is process-wide by nature, so each table of function pointers
// is filled once per process (see NvrtcApi.h, runtime/cuda/CudaLibraries.h).
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_CODEGEN_SHAREDLIBRARY_H
#define SOLDER_CODEGEN_SHAREDLIBRARY_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/Error.h"
#include <mutex>
#include <string>

namespace solder {

/// Opens Soname through the loader's search path (LD_LIBRARY_PATH, the
/// cache), else from each of Dirs (where the build found it). What says
/// what the library is for, in the error.
llvm::Expected<llvm::sys::DynamicLibrary>
openSharedLibrary(llvm::StringRef Soname, llvm::ArrayRef<std::string> Dirs,
                  llvm::StringRef What);

/// Looks Name up in Lib and stores it in Fn; an error names the symbol.
template <typename FnT>
llvm::Error resolveSymbol(llvm::sys::DynamicLibrary &Lib,
                          llvm::StringRef Soname, const char *Name, FnT &Fn) {
  void *Sym = Lib.getAddressOfSymbol(Name);
  if (!Sym)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "%s has no symbol %s (too old a version?)",
                                   Soname.str().c_str(), Name);
  Fn = reinterpret_cast<FnT>(Sym);
  return llvm::Error::success();
}

/// A table of function pointers filled once per process (the loader behind
/// it is process-wide): get() runs Load the first time and afterwards
/// returns the same table, or the same error.
template <typename TableT> class SharedLibraryTable {
public:
  template <typename LoadFn> llvm::Expected<const TableT *> get(LoadFn Load) {
    std::call_once(Once, [&] {
      if (llvm::Error E = Load(Table))
        Failure = llvm::toString(std::move(E));
      else
        Loaded = true;
    });
    if (!Loaded)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), Failure);
    return &Table;
  }
  /// For callers that already had get() succeed.
  bool loaded() const { return Loaded; }
  const TableT &table() const { return Table; }

private:
  std::once_flag Once;
  TableT Table;
  std::string Failure;
  bool Loaded = false;
};

} // namespace solder

#endif
