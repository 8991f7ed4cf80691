//===- ConvLayout.h - Convolution regions in NHWC ---------------*- C++ -*-===//
//
// Matches: 2-D Conv nodes with constant weights: all of them under
// ConvLayout::Nhwc; under Auto, those computing in fp16/bf16 when
// compiling for the GPU (cuDNN's tensor-core kernels read NHWC; on NCHW
// they transpose internally, which made ResNet-50 fp16 slower than fp32).
// Produces: each such Conv as `layout = "NHWC"` (ir/Layout.h) with its
// weights transposed once here to [M, kH, kW, C/group], between a
// Transpose to NHWC and one back to NCHW. Then, in one walk in graph order,
// the NCHW-ward Transposes sink through what does not care about layout,
// so that a whole region ends up channels-last:
//
//   - elementwise and broadcast ops whose non-constant operands are all
//     Transposes by the same perm (constants are permuted here);
//   - Concat of such Transposes (the axis is remapped);
//   - MaxPool/AveragePool become NHWC pools; GlobalAveragePool and
//     GlobalMaxPool become ReduceMean/ReduceMax over the spatial axes;
//     ReduceMean/Sum/Max reduce the permuted axes;
//   - a Transpose of a Transpose composes, and vanishes when the
//     composition is the identity (the NHWC input of the next Conv).
//
// A Transpose left whose moved dims are all 1 (the [N,1,1,C] result of a
// global pool before Flatten) becomes a Reshape, a view. What is left is a
// Transpose where the region meets a layout-sensitive op or a model input
// or output; loop fusion folds it into the kernel beside it.
// Leaves alone: ConvTranspose, 1-D/3-D convolutions, convolutions with
// computed weights, fp32/tf32 plans under Auto, everything under Nchw.
// Preconditions: after precision-conversion (Auto looks at the conv's
// type) and conv-pad-legalization (which pads in NCHW); before fusion.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_CONVLAYOUT_H
#define SOLDER_PASSES_CONVLAYOUT_H

#include "ir/DType.h"
#include "passes/Pass.h"

namespace solder {

class ConvLayoutPass : public Pass {
public:
  /// TargetGpu: Auto converts only when compiling for the GPU.
  ConvLayoutPass(ConvLayout Mode, bool TargetGpu)
      : Mode(Mode), TargetGpu(TargetGpu) {}
  llvm::StringRef name() const override { return "conv-layout"; }
  llvm::Expected<bool> run(Graph &G, DecisionLog &Log) override;

private:
  ConvLayout Mode;
  bool TargetGpu;
};

} // namespace solder

#endif
