//===- PlanFile.h - Plans on disk -------------------------------*- C++ -*-===//
//
// A plan file holds one Plan: kernels (sources and cubins with their arch),
// library choices, the memory plan, the steps, the executed graph's IR
// (large constants elided) and the weights as a binary section.
//
//   offset  size  what
//   0       8     magic "SLDRPLAN"
//   8       4     format version (PlanFormatVersion), little-endian
//   12      4     reserved, 0
//   16      8     payload size in bytes
//   24      8     planChecksum of the payload
//   32      ...   payload: the Plan's fields in a fixed order
//
// Files are written to a temporary name and renamed, so a reader never sees
// half a plan. Reading refuses another format version, a bad magic, a size
// or checksum mismatch, with a message saying which.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_RUNTIME_CUDA_PLANFILE_H
#define SOLDER_RUNTIME_CUDA_PLANFILE_H

#include "runtime/cuda/Plan.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <string>

namespace solder {

constexpr uint32_t PlanFormatVersion = 2;

/// 64-bit checksum of a plan payload: a multiply-xorshift step per 8-byte
/// word, each step a bijection of the state, so any single changed word
/// changes the result. Word-wise, because payloads hold gigabytes of
/// weights and a byte-wise hash was the slowest part of a cached compile.
uint64_t planChecksum(llvm::StringRef Bytes);

std::string serializePlan(const Plan &P);
llvm::Expected<Plan> deserializePlan(llvm::StringRef Bytes);

llvm::Error writePlanFile(llvm::StringRef Path, const Plan &P);
llvm::Expected<Plan> readPlanFile(llvm::StringRef Path);

/// True when the file starts with the plan magic (to tell plans from ONNX).
bool looksLikePlanFile(llvm::StringRef Path);

} // namespace solder

#endif
