//===- FuzzTargets.h - What each fuzz target feeds and checks ---*- C++ -*-===//
//
// One function per parser solder exposes to downloaded files. Each takes
// the raw input, runs it through the same entry point the CLI uses, and
// returns "" when solder behaved (accepted the input or refused it with an
// error), or a description of a broken invariant (a round trip that does
// not reproduce its input, a refusal of solder's own output). Crashes,
// leaks and undefined behaviour are the sanitizers' to report.
//
// The libFuzzer executables (fuzz/FuzzMain.cpp, one per target, built by
// -DSOLDER_FUZZ=ON) abort on a non-empty result; the regression test
// (tests/fuzz/) replays fuzz/regressions/ and fuzz/corpus/ through the same
// functions in the ordinary gcc and ASan builds.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_FUZZ_FUZZTARGETS_H
#define SOLDER_FUZZ_FUZZTARGETS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <string>

namespace solder {
namespace fuzz {

/// An ONNX ModelProto: summary, import (symbolic input dims bound to 2),
/// the GPU pass pipeline, the plan (kernel sources, memory plan, weights)
/// for sm_90 and its serialized form read back. NVRTC is not run: it is
/// far too slow per input (seconds); SOLDER_FUZZ_NVRTC=1 in the
/// environment compiles the kernels too and treats a kernel NVRTC rejects
/// as a bug. Without the CUDA toolkit at build time it stops after the
/// pipeline.
std::string onnxImport(llvm::StringRef Bytes);

/// A plan file, read as is, and again with its header repaired (sizes and
/// checksums recomputed) so the metadata decoder sees the mutated bytes;
/// a plan that reads must serialize and read back to the same bytes.
std::string planFile(llvm::StringRef Bytes);

/// Textual IR: a graph that parses must print, parse back and print the
/// same text.
std::string irParser(llvm::StringRef Bytes);

/// A .npy file: a tensor that reads must write and read back the same.
std::string npy(llvm::StringRef Bytes);

/// A serialized onnx.TensorProto (external data refused): a tensor that
/// reads must write and read back the same.
std::string tensorProto(llvm::StringRef Bytes);

struct FuzzTarget {
  /// The folder name under fuzz/corpus and fuzz/regressions.
  const char *Name;
  std::string (*Run)(llvm::StringRef Bytes);
};
/// Every target built into this binary.
llvm::ArrayRef<FuzzTarget> fuzzTargets();

} // namespace fuzz
} // namespace solder

#endif
