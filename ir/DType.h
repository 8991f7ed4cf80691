//===- DType.h - Element types of solder tensors ----------------*- C++ -*-===//
//
// The element types solder values can carry, their sizes and names, and the
// conversions between the 16-bit float formats and float.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_IR_DTYPE_H
#define SOLDER_IR_DTYPE_H

#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <cstring>
#include <optional>

namespace solder {

enum class DType : uint8_t {
  Undefined,
  F32,
  F16,
  BF16,
  F64,
  I8,
  U8,
  I16,
  U16,
  I32,
  U32,
  I64,
  U64,
  Bool,
};

/// Size of one element in bytes (0 for Undefined).
unsigned dtypeSize(DType T);
/// For code that only moves elements: calls F with a zero of the unsigned
/// integer type of T's size (uint8_t ... uint64_t); false, without calling
/// it, for Undefined (no bytes).
template <typename Fn> bool withElementWord(DType T, Fn &&F) {
  switch (dtypeSize(T)) {
  case 1:
    F(uint8_t(0));
    return true;
  case 2:
    F(uint16_t(0));
    return true;
  case 4:
    F(uint32_t(0));
    return true;
  case 8:
    F(uint64_t(0));
    return true;
  default:
    return false;
  }
}
/// Short textual name: "f32", "i64", "bool"...
llvm::StringRef dtypeName(DType T);
/// Inverse of dtypeName.
std::optional<DType> parseDType(llvm::StringRef Name);
/// ONNX TensorProto::DataType codes <-> DType (nullopt when unsupported).
std::optional<DType> dtypeFromOnnx(int64_t Code);
int onnxDTypeCode(DType T);
bool isFloat(DType T);   // f16, bf16, f32, f64
bool isInteger(DType T); // signed or unsigned integers (not bool)
bool isSigned(DType T);

/// The precision a plan computes in: fp32 (TF32 off), tf32 (fp32 storage,
/// TF32 tensor cores in the libraries), fp16 or bf16 (reduced storage,
/// fp32 accumulation).
enum class Precision : uint8_t { F32, TF32, F16, BF16 };
/// "fp32", "tf32", "fp16", "bf16" and back.
std::optional<Precision> parsePrecision(llvm::StringRef Name);
llvm::StringRef precisionName(Precision P);
/// The storage type of float tensors in a plan of precision P.
DType storageDType(Precision P);

/// Memory layout of 2-D convolutions in a plan (passes/ConvLayout.h): auto
/// puts fp16/bf16 convolutions in NHWC (cuDNN's tensor-core kernels want
/// it) when compiling for the GPU, nchw keeps ONNX's layout, nhwc converts
/// every 2-D convolution whatever its type.
enum class ConvLayout : uint8_t { Auto, Nchw, Nhwc };
/// "auto", "nchw", "nhwc" and back.
std::optional<ConvLayout> parseConvLayout(llvm::StringRef Name);
llvm::StringRef convLayoutName(ConvLayout L);

/// Who runs a matmul contraction group on the GPU (codegen/GemmEmitter.cpp):
/// auto = the faster where tuning (`--tune`) timed both, else the library;
/// library = cuBLASLt plus a generated kernel for the rest of the epilogue;
/// generated = one generated tensor-core GEMM wherever it supports the
/// group (f16/bf16); wgmma = the same with Hopper's wgmma main loop where
/// it applies (sm_90, see codegen/WgmmaGemm.h), mma.sync elsewhere.
enum class GemmKernels : uint8_t { Auto, Library, Generated, Wgmma };
/// Whether G makes every matmul group a generated GEMM where one applies.
inline bool forcesGeneratedGemm(GemmKernels G) {
  return G == GemmKernels::Generated || G == GemmKernels::Wgmma;
}
/// "auto", "library", "generated", "wgmma" and back.
std::optional<GemmKernels> parseGemmKernels(llvm::StringRef Name);
llvm::StringRef gemmKernelsName(GemmKernels G);

/// Who runs an attention group (attention-recognition's Attention op) on
/// the GPU: auto = cuDNN's fused attention where tuning (`--tune`) timed
/// it faster, else the generated flash-attention kernel; generated = the
/// generated kernel; cudnn = cuDNN wherever it takes the group (f16/bf16).
enum class AttentionKernels : uint8_t { Auto, Generated, Cudnn };
/// "auto", "generated", "cudnn" and back.
std::optional<AttentionKernels> parseAttentionKernels(llvm::StringRef Name);
llvm::StringRef attentionKernelsName(AttentionKernels A);

/// How a convolution group runs on the GPU: fused = cuDNN's
/// cudnnConvolutionBiasActivationForward (bias, residual, ReLU) plus one
/// generated kernel for the rest of the chain; graph = the convolution and
/// its whole chain as one cuDNN backend operation graph (runtime fusion;
/// NHWC f16/bf16 groups whose chain has pointwise forms); auto = graph
/// where tuning (`--tune`) timed it faster, else fused.
enum class ConvEpilogues : uint8_t { Auto, Fused, Graph };
/// "auto", "fused", "graph" and back.
std::optional<ConvEpilogues> parseConvEpilogues(llvm::StringRef Name);
llvm::StringRef convEpiloguesName(ConvEpilogues C);

/// IEEE half <-> float, round to nearest even.
float halfToFloat(uint16_t H);
/// Every float: infinities, NaN, overflow, subnormals.
uint16_t floatToHalfSlow(float F);
/// The same bits, with the common case (a normal half, no overflow)
/// inline: 110M BERT weights are converted per compile.
inline uint16_t floatToHalf(float F) {
  uint32_t U;
  std::memcpy(&U, &F, 4);
  uint32_t Abs = U & 0x7fffffffu;
  if (Abs - 0x38800000u >= 0x477ff000u - 0x38800000u)
    return floatToHalfSlow(F);
  uint32_t H = (Abs >> 13) - (112u << 10); // rebias the exponent
  uint32_t Rest = Abs & 0x1fffu;
  H += uint32_t(Rest > 0x1000u) | (uint32_t(Rest == 0x1000u) & H & 1u);
  return uint16_t((U >> 16 & 0x8000u) | H);
}
/// bfloat16 <-> float, round to nearest even (NaN stays NaN).
inline float bf16ToFloat(uint16_t B) {
  uint32_t U = uint32_t(B) << 16;
  float F;
  std::memcpy(&F, &U, 4);
  return F;
}
uint16_t floatToBF16(float F);

} // namespace solder

#endif
