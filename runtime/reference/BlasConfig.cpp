//===- BlasConfig.cpp - OpenBLAS, loaded on first use, single-threaded ----===//
//
// OpenBLAS is opened when the reference executor first multiplies matrices,
// not linked: the pthreads build starts one spinning worker per core from
// its library constructor, which cost every solder process (compiles, GPU
// runs) a core for ~0.1 s, and it reads its thread count only then. So the
// environment asks for one thread before the library is opened.
//
//===----------------------------------------------------------------------===//
#include "runtime/reference/ConvPoolUtils.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/ErrorHandling.h"
#include <cstdlib>
#include <mutex>
#include <string>

namespace solder {
namespace ref {
namespace detail {

static BlasApi loadBlas() {
  // One thread: see useSingleThreadedBlas in ConvPoolUtils.h.
  ::setenv("OPENBLAS_NUM_THREADS", "1", /*overwrite=*/1);
  std::string Err;
  auto Lib = llvm::sys::DynamicLibrary::getPermanentLibrary(
      SOLDER_OPENBLAS_SONAME, &Err);
  if (!Lib.isValid())
    Lib = llvm::sys::DynamicLibrary::getPermanentLibrary(
        SOLDER_OPENBLAS_DIR "/" SOLDER_OPENBLAS_SONAME, &Err);
  if (!Lib.isValid())
    llvm::report_fatal_error(llvm::Twine("cannot load " SOLDER_OPENBLAS_SONAME
                                         " (OpenBLAS, for the reference "
                                         "executor): ") +
                                 Err + "; install libopenblas0",
                             /*gen_crash_diag=*/false);
  BlasApi Api;
  Api.Sgemm = reinterpret_cast<decltype(Api.Sgemm)>(
      Lib.getAddressOfSymbol("cblas_sgemm"));
  Api.Dgemm = reinterpret_cast<decltype(Api.Dgemm)>(
      Lib.getAddressOfSymbol("cblas_dgemm"));
  auto SetThreads = reinterpret_cast<void (*)(int)>(
      Lib.getAddressOfSymbol("openblas_set_num_threads"));
  if (!Api.Sgemm || !Api.Dgemm || !SetThreads)
    llvm::report_fatal_error(SOLDER_OPENBLAS_SONAME
                             " lacks cblas_sgemm, "
                             "cblas_dgemm or openblas_set_num_threads",
                             /*gen_crash_diag=*/false);
  // In case the library was already loaded with more threads.
  SetThreads(1);
  return Api;
}

const BlasApi &blas() {
  // The loader is process-wide; so is this table, filled once.
  static std::once_flag Once;
  static BlasApi Api;
  std::call_once(Once, [] { Api = loadBlas(); });
  return Api;
}

} // namespace detail
} // namespace ref
} // namespace solder
