//===- LibraryEmulator.h - A plan's library calls on the CPU ----*- C++ -*-===//
//
// What the plan asks of cuBLASLt and cuDNN, computed with plain loops from
// the same configurations (runtime/cuda/Plan.h) the GPU runtime hands the
// libraries, so that a whole plan runs on the CPU beside the emulated
// kernels (KernelEmulator.h): the builder's operand swaps, leading
// dimensions, batch strides and pointer-array batches, transposes, bias and
// activation epilogues, beta C, NHWC tensors with KRSC filters, groups,
// dilations, transposed convolutions and the attention calls' strides,
// part offsets and masks are then checked against the
// reference executor too. Accumulates in double; stores round to the
// configuration's element type.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TESTS_EMULATOR_LIBRARYEMULATOR_H
#define SOLDER_TESTS_EMULATOR_LIBRARYEMULATOR_H

#include "runtime/cuda/Plan.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

namespace solder {
namespace emu {

/// Where a plan buffer lives in host memory.
using Resolver = llvm::function_ref<void *(const BufferRef &)>;

/// cublasLtMatmul as LibraryCalls.cpp configures it from C.
llvm::Error runGemm(const GemmConfig &C, Resolver Where);
/// cudnnConvolutionForward, cudnnConvolutionBiasActivationForward or
/// cudnnConvolutionBackwardData as LibraryCalls.cpp configures it from C.
llvm::Error runConv(const ConvConfig &C, Resolver Where);
/// cuDNN's fused attention as CudnnAttention.cpp describes it from C:
/// softmax(Scale Q K^T + Bias [causal]) V over the configured strides.
llvm::Error runAttention(const AttentionConfig &C, Resolver Where);

} // namespace emu
} // namespace solder

#endif
