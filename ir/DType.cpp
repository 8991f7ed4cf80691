//===- DType.cpp - Element types of solder tensors
//-------------------------===//
#include "ir/DType.h"
#include <cmath>

namespace solder {

unsigned dtypeSize(DType T) {
  switch (T) {
  case DType::Undefined:
    return 0;
  case DType::I8:
  case DType::U8:
  case DType::Bool:
    return 1;
  case DType::F16:
  case DType::BF16:
  case DType::I16:
  case DType::U16:
    return 2;
  case DType::F32:
  case DType::I32:
  case DType::U32:
    return 4;
  case DType::F64:
  case DType::I64:
  case DType::U64:
    return 8;
  }
  return 0;
}

llvm::StringRef dtypeName(DType T) {
  switch (T) {
  case DType::Undefined:
    return "undef";
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F64:
    return "f64";
  case DType::I8:
    return "i8";
  case DType::U8:
    return "u8";
  case DType::I16:
    return "i16";
  case DType::U16:
    return "u16";
  case DType::I32:
    return "i32";
  case DType::U32:
    return "u32";
  case DType::I64:
    return "i64";
  case DType::U64:
    return "u64";
  case DType::Bool:
    return "bool";
  }
  return "undef";
}

std::optional<DType> parseDType(llvm::StringRef Name) {
  for (int I = int(DType::F32); I <= int(DType::Bool); ++I)
    if (dtypeName(DType(I)) == Name)
      return DType(I);
  return std::nullopt;
}

std::optional<Precision> parsePrecision(llvm::StringRef Name) {
  for (Precision P :
       {Precision::F32, Precision::TF32, Precision::F16, Precision::BF16})
    if (precisionName(P) == Name)
      return P;
  return std::nullopt;
}

llvm::StringRef precisionName(Precision P) {
  switch (P) {
  case Precision::F32:
    return "fp32";
  case Precision::TF32:
    return "tf32";
  case Precision::F16:
    return "fp16";
  case Precision::BF16:
    return "bf16";
  }
  return "fp32";
}

std::optional<ConvLayout> parseConvLayout(llvm::StringRef Name) {
  for (ConvLayout L : {ConvLayout::Auto, ConvLayout::Nchw, ConvLayout::Nhwc})
    if (convLayoutName(L) == Name)
      return L;
  return std::nullopt;
}

llvm::StringRef convLayoutName(ConvLayout L) {
  switch (L) {
  case ConvLayout::Auto:
    return "auto";
  case ConvLayout::Nchw:
    return "nchw";
  case ConvLayout::Nhwc:
    return "nhwc";
  }
  return "auto";
}

std::optional<GemmKernels> parseGemmKernels(llvm::StringRef Name) {
  for (GemmKernels G : {GemmKernels::Auto, GemmKernels::Library,
                        GemmKernels::Generated, GemmKernels::Wgmma})
    if (gemmKernelsName(G) == Name)
      return G;
  return std::nullopt;
}

llvm::StringRef gemmKernelsName(GemmKernels G) {
  switch (G) {
  case GemmKernels::Auto:
    return "auto";
  case GemmKernels::Library:
    return "library";
  case GemmKernels::Generated:
    return "generated";
  case GemmKernels::Wgmma:
    return "wgmma";
  }
  return "auto";
}

std::optional<AttentionKernels> parseAttentionKernels(llvm::StringRef Name) {
  for (AttentionKernels A :
       {AttentionKernels::Auto, AttentionKernels::Generated,
        AttentionKernels::Cudnn})
    if (attentionKernelsName(A) == Name)
      return A;
  return std::nullopt;
}

llvm::StringRef attentionKernelsName(AttentionKernels A) {
  switch (A) {
  case AttentionKernels::Auto:
    return "auto";
  case AttentionKernels::Generated:
    return "generated";
  case AttentionKernels::Cudnn:
    return "cudnn";
  }
  return "auto";
}

std::optional<ConvEpilogues> parseConvEpilogues(llvm::StringRef Name) {
  for (ConvEpilogues C :
       {ConvEpilogues::Auto, ConvEpilogues::Fused, ConvEpilogues::Graph})
    if (convEpiloguesName(C) == Name)
      return C;
  return std::nullopt;
}

llvm::StringRef convEpiloguesName(ConvEpilogues C) {
  switch (C) {
  case ConvEpilogues::Auto:
    return "auto";
  case ConvEpilogues::Fused:
    return "fused";
  case ConvEpilogues::Graph:
    return "graph";
  }
  return "auto";
}

DType storageDType(Precision P) {
  return P == Precision::F16    ? DType::F16
         : P == Precision::BF16 ? DType::BF16
                                : DType::F32;
}

// ONNX codes: FLOAT=1 UINT8=2 INT8=3 UINT16=4 INT16=5 INT32=6 INT64=7
// STRING=8 BOOL=9 FLOAT16=10 DOUBLE=11 UINT32=12 UINT64=13 BFLOAT16=16.
std::optional<DType> dtypeFromOnnx(int64_t Code) {
  switch (Code) {
  case 1:
    return DType::F32;
  case 2:
    return DType::U8;
  case 3:
    return DType::I8;
  case 4:
    return DType::U16;
  case 5:
    return DType::I16;
  case 6:
    return DType::I32;
  case 7:
    return DType::I64;
  case 9:
    return DType::Bool;
  case 10:
    return DType::F16;
  case 11:
    return DType::F64;
  case 12:
    return DType::U32;
  case 13:
    return DType::U64;
  case 16:
    return DType::BF16;
  default:
    return std::nullopt;
  }
}

int onnxDTypeCode(DType T) {
  switch (T) {
  case DType::F32:
    return 1;
  case DType::U8:
    return 2;
  case DType::I8:
    return 3;
  case DType::U16:
    return 4;
  case DType::I16:
    return 5;
  case DType::I32:
    return 6;
  case DType::I64:
    return 7;
  case DType::Bool:
    return 9;
  case DType::F16:
    return 10;
  case DType::F64:
    return 11;
  case DType::U32:
    return 12;
  case DType::U64:
    return 13;
  case DType::BF16:
    return 16;
  case DType::Undefined:
    break;
  }
  return 0;
}

bool isFloat(DType T) {
  return T == DType::F32 || T == DType::F16 || T == DType::BF16 ||
         T == DType::F64;
}
bool isInteger(DType T) {
  switch (T) {
  case DType::I8:
  case DType::U8:
  case DType::I16:
  case DType::U16:
  case DType::I32:
  case DType::U32:
  case DType::I64:
  case DType::U64:
    return true;
  default:
    return false;
  }
}
bool isSigned(DType T) {
  return isFloat(T) || T == DType::I8 || T == DType::I16 || T == DType::I32 ||
         T == DType::I64;
}

float halfToFloat(uint16_t H) {
  uint32_t Sign = uint32_t(H & 0x8000) << 16;
  uint32_t Exp = (H >> 10) & 0x1f;
  uint32_t Mant = H & 0x3ff;
  uint32_t U;
  if (Exp == 0) {
    if (Mant == 0) {
      U = Sign;
    } else { // subnormal: normalise
      int E = -1;
      do {
        ++E;
        Mant <<= 1;
      } while ((Mant & 0x400) == 0);
      Mant &= 0x3ff;
      U = Sign | uint32_t(127 - 15 - E) << 23 | Mant << 13;
    }
  } else if (Exp == 31) {
    U = Sign | 0x7f800000u | Mant << 13;
  } else {
    U = Sign | (Exp + 127 - 15) << 23 | Mant << 13;
  }
  float F;
  std::memcpy(&F, &U, 4);
  return F;
}

uint16_t floatToHalfSlow(float F) {
  uint32_t U;
  std::memcpy(&U, &F, 4);
  uint16_t Sign = (U >> 16) & 0x8000;
  uint32_t Abs = U & 0x7fffffffu;
  if (Abs >= 0x7f800000u) // inf or nan
    return Sign | 0x7c00 | (Abs > 0x7f800000u ? 0x200 : 0);
  if (Abs >= 0x477ff000u) // rounds to >= 65520: overflow to inf
    return Sign | 0x7c00;
  if (Abs < 0x38800000u) { // below the smallest normal half: subnormal
    // Let float arithmetic do the round-to-nearest-even at 2^-24 steps.
    float A;
    std::memcpy(&A, &Abs, 4);
    float Scaled = A * 16777216.0f; // 2^24
    uint32_t M = uint32_t(std::nearbyint(Scaled));
    return Sign | uint16_t(M);
  }
  uint32_t Exp = ((Abs >> 23) - 127 + 15);
  uint32_t Mant = Abs & 0x7fffff;
  uint32_t H = Exp << 10 | Mant >> 13;
  uint32_t Rest = Mant & 0x1fff;
  if (Rest > 0x1000 || (Rest == 0x1000 && (H & 1)))
    ++H; // may carry into the exponent, which is still correct
  return Sign | uint16_t(H);
}

uint16_t floatToBF16(float F) {
  uint32_t U;
  std::memcpy(&U, &F, 4);
  if ((U & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((U >> 16) | 0x40);
  uint32_t Rounding = 0x7fff + ((U >> 16) & 1);
  return uint16_t((U + Rounding) >> 16);
}

} // namespace solder
