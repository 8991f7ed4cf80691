//===- GeneratedKernel.h - One emitted CUDA kernel --------------*- C++ -*-===//
//
// The contract between code generation and the runtime: a kernel's source,
// its symbol, what its parameters point at, and its launch configuration.
// Shapes are baked into the source, so a kernel's parameters are the
// device pointers of the values it reads and writes, in Args order, then
// its scratch pointer if it has one, then any tensor maps (TMA
// descriptors) of them, by value.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_CODEGEN_GENERATEDKERNEL_H
#define SOLDER_CODEGEN_GENERATEDKERNEL_H

#include "ir/Graph.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include <array>
#include <string>
#include <vector>

namespace solder {

/// What a tensor map (CUtensorMap, 128 bytes, for Hopper's tensor memory
/// accelerator) says of a buffer besides its address: a 2-D tiled view,
/// 128-byte swizzle, elements past the edges read as zero.
struct TensorMapShape {
  DType Elem = DType::F16;
  /// Elements along each dim, inner first; bytes from one row to the next.
  int64_t Dims[2] = {0, 0};
  int64_t RowBytes = 0;
  /// Elements a copy moves along each dim.
  uint32_t Box[2] = {0, 0};
};

/// A tensor map a kernel takes by value after its pointers, of input
/// Input's buffer (an index into GeneratedKernel::Inputs). The runtime
/// encodes it from the buffer's address (PlanTensorMap).
struct KernelTensorMap : TensorMapShape {
  uint32_t Input = 0;
};

struct GeneratedKernel {
  /// The `extern "C" __global__` symbol; stable for the same graph.
  std::string Name;
  /// Complete CUDA C++ translation unit (deterministic bytes).
  std::string Source;
  /// Kernel parameters in order: each a pointer to one value's buffer.
  /// Results the kernel writes come first, then the operands it reads.
  std::vector<const Value *> Outputs;
  std::vector<const Value *> Inputs;
  /// Tensor-map parameters after the pointers, in order.
  std::vector<KernelTensorMap> TensorMaps;
  std::array<unsigned, 3> Grid = {1, 1, 1};
  std::array<unsigned, 3> Block = {1, 1, 1};
  unsigned DynamicSharedBytes = 0;
  /// The IR/ONNX nodes implemented, and a one-line shape summary, for
  /// dump-kernels headers and profiles.
  std::vector<std::string> NodeNames;
  std::string Summary;
  /// The fused group implemented (FusedGroup id), or -1 for a single node.
  int64_t GroupId = -1;
  /// The kernel waits for the previous grid itself (griddepcontrol.wait
  /// first thing), so it may be launched as a programmatic dependent.
  bool DependentLaunch = false;
  /// Bytes of scratch the kernel takes as one more pointer after its
  /// inputs (0: none): device memory of its own, zero before its first
  /// launch and kept between launches, which the kernel leaves zero again
  /// (arrival counters of blocks that wait for each other).
  uint32_t ScratchBytes = 0;
  /// Its blocks wait for each other, so they must all be resident at once:
  /// a cooperative launch (which fails rather than run them in waves).
  bool Cooperative = false;
  /// Counts the kernel takes by value (`long long`, after every other
  /// parameter) instead of baking them in: the row or element count of
  /// its outermost loop. Kernels that differ only in them (one model at
  /// several batch sizes) have the same source, so one compiled cubin.
  std::vector<int64_t> Counts;
};

/// The comment line that heads a kernel's body with its shape summary
/// (KernelBuilder::beginKernel prints it).
inline std::string summaryComment(llvm::StringRef Summary) {
  return ("// " + Summary).str();
}

/// Source without its shape-summary line: what NVRTC and the cubin cache
/// see, so kernels that take their varying lengths as parameters are one
/// text at every shape.
inline std::string withoutSummaryComment(llvm::StringRef Source,
                                         llvm::StringRef Summary) {
  std::string S = Source.str();
  if (Summary.empty())
    return S;
  std::string Line = summaryComment(Summary) + "\n";
  size_t At = S.find(Line);
  if (At != std::string::npos)
    S.erase(At, Line.size());
  return S;
}

} // namespace solder

#endif
