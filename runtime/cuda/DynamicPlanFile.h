//===- DynamicPlanFile.h - A dynamic model as one file ----------*- C++ -*-===//
//
// A dynamic model (CompileOptions::InputRanges) compiles a variant per
// shape when it is first run (ShapeVariants.h), so its plan file holds what
// compiles them rather than kernels: the ONNX model's bytes and the compile
// options with the ranges. Loading it compiles the max-shape variant (as
// compiling the model did) from the embedded model, with NVRTC's disk cache.
//
// Layout (little endian): "SOLDERDP", u32 format version, u64 header size,
// the header (JSON: options, ranges, fixed shapes), u64 model size, the
// model, u64 checksum (PlanChecksum) of everything before it. Written to a
// temporary file and renamed, like a static plan.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_RUNTIME_CUDA_DYNAMICPLANFILE_H
#define SOLDER_RUNTIME_CUDA_DYNAMICPLANFILE_H

#include "solder/Solder.h"
#include "llvm/Support/Error.h"
#include <string>

namespace solder {

constexpr uint32_t DynamicPlanFormatVersion = 1;

/// What a dynamic plan file holds.
struct DynamicPlan {
  CompileOptions Opts; ///< the ranges included; no cache dir or callbacks
  std::string OnnxBytes;
};

std::string serializeDynamicPlan(const DynamicPlan &P);
llvm::Expected<DynamicPlan> deserializeDynamicPlan(llvm::StringRef Bytes);
llvm::Error writeDynamicPlanFile(llvm::StringRef Path, const DynamicPlan &P);
llvm::Expected<DynamicPlan> readDynamicPlanFile(llvm::StringRef Path);
/// True when the file starts with the dynamic plan magic.
bool looksLikeDynamicPlanFile(llvm::StringRef Path);

} // namespace solder

#endif
