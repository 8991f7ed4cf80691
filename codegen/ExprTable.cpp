//===- ExprTable.cpp - Elementwise ops as CUDA expressions ----------------===//
//
// The rule table below is the only place that knows how an elementwise op
// is spelled in CUDA. A rule applies to a set of compute classes; the first
// matching rule of an op wins, so a dtype-specific override is listed
// before the generic rule. Ops with modes (Gelu's approximate, Mod's fmod,
// IsInf's detect_*) pick their rules through a variant string. Template
// placeholders:
//   $0..$9   operands              $T   the compute type ("float"...)
//   $F       "f" for float, "" for double (expf vs exp)
//   $alpha $beta $gamma $eps       attributes, baked as exact literals
//
//===----------------------------------------------------------------------===//
#include "codegen/ExprTable.h"
#include "codegen/CudaPrinter.h"
#include "ir/OpRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace solder {

namespace {

/// Compute classes a rule may apply to.
enum ClassBits : unsigned {
  CFloat = 1,  ///< f32, f16, bf16 (computed in float)
  CDouble = 2, ///< f64
  CSInt = 4,   ///< signed integers
  CUInt = 8,   ///< unsigned integers
  CBool = 16,
  CFP = CFloat | CDouble,
  CInt = CSInt | CUInt,
  CNum = CFP | CInt,
  CSigned = CFP | CSInt,
  CAll = CNum | CBool,
};

unsigned classOf(DType T) {
  switch (T) {
  case DType::F32:
  case DType::F16:
  case DType::BF16:
    return CFloat;
  case DType::F64:
    return CDouble;
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
    return CSInt;
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64:
    return CUInt;
  case DType::Bool:
    return CBool;
  case DType::Undefined:
    break;
  }
  return 0;
}

struct ExprRule {
  OpKind Op;
  unsigned Classes;
  /// Empty, or the op's mode the rule is for (Gelu's "approximate").
  const char *Variant;
  const char *Template;
};

// clang-format off
const ExprRule Rules[] = {
  // Activations.
  {OpKind::Relu, CFP, "", "fmax$F($0, ($T)0)"},
  {OpKind::Relu, CSInt, "", "max($0, ($T)0)"},
  {OpKind::LeakyRelu, CFP, "", "$0 >= ($T)0 ? $0 : $alpha * $0"},
  {OpKind::Elu, CFP, "", "$0 >= ($T)0 ? $0 : $alpha * (exp$F($0) - ($T)1)"},
  {OpKind::Selu, CFP, "",
   "$0 > ($T)0 ? $gamma * $0 : $gamma * ($alpha * exp$F($0) - $alpha)"},
  // 1 / (1 + e^-x): e^-x overflows to inf for very negative x, giving 0.
  {OpKind::Sigmoid, CFP, "", "($T)1 / (($T)1 + exp$F(-$0))"},
  {OpKind::Tanh, CFP, "", "tanh$F($0)"},
  {OpKind::HardSigmoid, CFP, "",
   "fmax$F(($T)0, fmin$F(($T)1, $alpha * $0 + $beta))"},
  {OpKind::HardSwish, CFP, "",
   "$0 * fmax$F(($T)0, fmin$F(($T)1, $0 / ($T)6 + ($T)0.5))"},
  // log(1 + e^x) without overflow for large x.
  {OpKind::Softplus, CFP, "",
   "$0 > ($T)0 ? $0 + log1p$F(exp$F(-$0)) : log1p$F(exp$F($0))"},
  {OpKind::Softsign, CFP, "", "$0 / (($T)1 + fabs$F($0))"},
  {OpKind::Gelu, CFP, "none",
   "($T)0.5 * $0 * (($T)1 + erf$F($0 * ($T)0.70710678118654752440))"},
  {OpKind::Gelu, CFP, "tanh",
   "($T)0.5 * $0 * (($T)1 + tanh$F(($T)0.79788456080286535588 * "
   "($0 + ($T)0.044715 * $0 * $0 * $0)))"},
  // f16/bf16 operands (computed in float, stored reduced), either mode: the
  // tanh form with the hardware's tanh (tanh.approx.f32, relative error
  // 2^-11), as cuBLASLt's GELU_BIAS computes it for the same groups
  // (LibraryEpilogue.cpp); erf's polynomial made a generated GEMM's GELU
  // epilogue the slowest part of BERT's FFN-in.
  {OpKind::Gelu, CFloat, "reduced",
   "0.5f * $0 * (1.f + __tanhf(0.79788456080286535588f * "
   "($0 + 0.044715f * $0 * $0 * $0)))"},
  {OpKind::PRelu, CSigned, "", "$0 < ($T)0 ? $1 * $0 : $0"},
  // Math functions.
  {OpKind::Erf, CFP, "", "erf$F($0)"},
  {OpKind::Erf, CInt, "", "($T)erf((double)$0)"},
  {OpKind::Sqrt, CFP, "", "sqrt$F($0)"},
  {OpKind::Exp, CFP, "", "exp$F($0)"},
  {OpKind::Log, CFP, "", "log$F($0)"},
  {OpKind::Neg, CSigned, "", "-$0"},
  {OpKind::Reciprocal, CFP, "", "($T)1 / $0"},
  {OpKind::Abs, CFP, "", "fabs$F($0)"},
  {OpKind::Abs, CSInt, "", "$0 < ($T)0 ? -$0 : $0"},
  {OpKind::Abs, CUInt, "", "$0"},
  {OpKind::Floor, CFP, "", "floor$F($0)"},
  {OpKind::Ceil, CFP, "", "ceil$F($0)"},
  // Round halves to even: rint in the default rounding mode.
  {OpKind::Round, CFP, "", "rint$F($0)"},
  // +-0 gives +0 and NaN stays NaN (numpy.sign).
  {OpKind::Sign, CSigned, "",
   "$0 > ($T)0 ? ($T)1 : ($0 < ($T)0 ? ($T)-1 : ($0 == ($T)0 ? ($T)0 : $0))"},
  {OpKind::Sign, CUInt, "", "$0 > ($T)0 ? ($T)1 : ($T)0"},
  {OpKind::Sin, CFP, "", "sin$F($0)"},
  {OpKind::Cos, CFP, "", "cos$F($0)"},
  {OpKind::Tan, CFP, "", "tan$F($0)"},
  {OpKind::Asin, CFP, "", "asin$F($0)"},
  {OpKind::Acos, CFP, "", "acos$F($0)"},
  {OpKind::Atan, CFP, "", "atan$F($0)"},
  {OpKind::Sinh, CFP, "", "sinh$F($0)"},
  {OpKind::Cosh, CFP, "", "cosh$F($0)"},
  {OpKind::Asinh, CFP, "", "asinh$F($0)"},
  {OpKind::Acosh, CFP, "", "acosh$F($0)"},
  {OpKind::Atanh, CFP, "", "atanh$F($0)"},
  // x * tanh(softplus(x)), softplus written as in the Softplus rule.
  {OpKind::Mish, CFP, "",
   "$0 * tanh$F($0 > ($T)0 ? $0 + log1p$F(exp$F(-$0)) : log1p$F(exp$F($0)))"},
  // IsInf's variant says which infinities it detects.
  {OpKind::IsNaN, CFP, "", "isnan($0)"},
  {OpKind::IsInf, CFP, "both", "isinf($0)"},
  {OpKind::IsInf, CFP, "positive", "isinf($0) && $0 > ($T)0"},
  {OpKind::IsInf, CFP, "negative", "isinf($0) && $0 < ($T)0"},
  {OpKind::IsInf, CFP, "none", "false"},
  {OpKind::Not, CBool, "", "!$0"},
  // Arithmetic with broadcasting.
  {OpKind::Add, CNum, "", "$0 + $1"},
  {OpKind::Sub, CNum, "", "$0 - $1"},
  {OpKind::Mul, CNum, "", "$0 * $1"},
  {OpKind::Div, CNum, "", "$0 / $1"},
  {OpKind::Pow, CFP, "", "pow$F($0, ($T)$1)"},
  {OpKind::Pow, CInt, "", "($T)pow((double)$0, (double)$1)"},
  // Mod: the variant is "fmod" (C's sign of the dividend) or "" (Python's
  // sign of the divisor; integers only). A zero integer divisor gives 0
  // (the reference executor refuses it; a kernel cannot report it), and so
  // does -1, whose remainder is 0 but whose INT_MIN % -1 overflows.
  {OpKind::Mod, CFP, "fmod", "fmod$F($0, $1)"},
  {OpKind::Mod, CSInt, "fmod",
   "$1 == ($T)0 || $1 == ($T)-1 ? ($T)0 : $0 % $1"},
  {OpKind::Mod, CSInt, "",
   "$1 == ($T)0 || $1 == ($T)-1 ? ($T)0 : "
   "($0 % $1 != ($T)0 && ($0 % $1 < ($T)0) != ($1 < ($T)0) "
   "? $0 % $1 + $1 : $0 % $1)"},
  {OpKind::Mod, CUInt, "fmod", "$1 == ($T)0 ? ($T)0 : $0 % $1"},
  {OpKind::Mod, CUInt, "", "$1 == ($T)0 ? ($T)0 : $0 % $1"},
  {OpKind::Sum, CNum, "", "$0 + $1"},
  {OpKind::Max, CFP, "", "fmax$F($0, $1)"},
  {OpKind::Max, CInt, "", "max($0, $1)"},
  {OpKind::Min, CFP, "", "fmin$F($0, $1)"},
  {OpKind::Min, CInt, "", "min($0, $1)"},
  // NaN stays NaN (both comparisons are false), as in numpy.clip.
  // min(max(x, lo), hi), as ONNX defines it: lo > hi makes every element
  // hi; a NaN stays NaN.
  {OpKind::Clip, CNum, "", "$0 < $1 ? ($1 > $2 ? $2 : $1) : ($0 > $2 ? $2 : $0)"},
  {OpKind::Equal, CAll, "", "$0 == $1"},
  {OpKind::Less, CNum, "", "$0 < $1"},
  {OpKind::Greater, CNum, "", "$0 > $1"},
  {OpKind::GreaterOrEqual, CNum, "", "$0 >= $1"},
  {OpKind::LessOrEqual, CNum, "", "$0 <= $1"},
  {OpKind::And, CBool, "", "$0 && $1"},
  {OpKind::Or, CBool, "", "$0 || $1"},
  {OpKind::Where, CAll, "", "$0 ? $1 : $2"},
  // (elementwiseExpr writes it: absent operands leave their terms out)
  {OpKind::ApplyRowStats, CFP, "", "$0"},
  // Inference batch norm, operands X, scale, B, mean, var per channel.
  {OpKind::BatchNormalization, CFP, "",
   "($0 - $3) / sqrt$F($4 + $eps) * $1 + $2"},
};
// clang-format on

bool isVariadicFold(OpKind Op) {
  return Op == OpKind::Sum || Op == OpKind::Max || Op == OpKind::Min;
}

std::string variantOf(const Node &N) {
  const AttrMap &A = N.attrs();
  switch (N.kind()) {
  case OpKind::Gelu:
    return A.getString("approximate", "none");
  case OpKind::Mod:
    return A.getInt("fmod", 0) ? "fmod" : "";
  case OpKind::IsInf: {
    bool Neg = A.getInt("detect_negative", 1),
         Pos = A.getInt("detect_positive", 1);
    return Neg && Pos ? "both" : Pos ? "positive" : Neg ? "negative" : "none";
  }
  default:
    return "";
  }
}

const ExprRule *findRule(OpKind Op, DType T, llvm::StringRef Variant) {
  unsigned C = classOf(T);
  for (const ExprRule &R : Rules)
    if (R.Op == Op && (R.Classes & C) && Variant == R.Variant)
      return &R;
  return nullptr;
}

std::string hexDouble(double V) {
  char Buf[64];
  std::snprintf(Buf, sizeof(Buf), "%a", V);
  return Buf;
}

/// Fills a template. Attribute values come from N with ONNX's defaults.
std::string expand(llvm::StringRef Tpl, const Node &N, DType Compute,
                   llvm::ArrayRef<std::string> Args) {
  std::string Out;
  const AttrMap &A = N.attrs();
  auto Attr = [&](llvm::StringRef Name) -> std::string {
    float Def = 0;
    if (Name == "alpha")
      Def = N.kind() == OpKind::LeakyRelu     ? 0.01f
            : N.kind() == OpKind::HardSigmoid ? 0.2f
            : N.kind() == OpKind::Selu        ? 1.67326319217681884765625f
                                              : 1.0f;
    else if (Name == "beta")
      Def = 0.5f;
    else if (Name == "gamma")
      Def = 1.05070102214813232421875f;
    else if (Name == "eps")
      return computeLiteral(Compute, A.getFloat("epsilon", 1e-5f));
    return computeLiteral(Compute, A.getFloat(Name, Def));
  };
  for (size_t I = 0; I < Tpl.size();) {
    if (Tpl[I] != '$') {
      Out += Tpl[I++];
      continue;
    }
    llvm::StringRef Rest = Tpl.substr(I + 1);
    if (!Rest.empty() && llvm::isDigit(Rest[0])) {
      unsigned Idx = Rest[0] - '0';
      assert(Idx < Args.size() && !Args[Idx].empty() &&
             "template names an operand the caller did not pass");
      Out += Args[Idx];
      I += 2;
    } else if (Rest.startswith("T")) {
      Out += computeTypeName(Compute).str();
      I += 2;
    } else if (Rest.startswith("F")) {
      Out += Compute == DType::F64 ? "" : "f";
      I += 2;
    } else {
      size_t Len = 0;
      while (Len < Rest.size() && llvm::isAlpha(Rest[Len]))
        ++Len;
      Out += "(" + Attr(Rest.substr(0, Len)) + ")";
      I += 1 + Len;
    }
  }
  return "(" + Out + ")";
}

} // namespace

DType computeDType(DType T) {
  switch (T) {
  case DType::F16:
  case DType::BF16:
    return DType::F32;
  case DType::I8:
  case DType::U8:
  case DType::I16:
  case DType::U16:
    return DType::I32;
  default:
    return T;
  }
}

llvm::StringRef computeTypeName(DType T) {
  switch (computeDType(T)) {
  case DType::F32:
    return "float";
  case DType::F64:
    return "double";
  case DType::I32:
    return "int";
  case DType::U32:
    return "unsigned int";
  case DType::I64:
    return "long long";
  case DType::U64:
    return "unsigned long long";
  case DType::Bool:
    return "bool";
  default:
    break;
  }
  assert(false && "no compute type");
  return "void";
}

std::string loadExpr(DType T, llvm::StringRef X) {
  switch (T) {
  case DType::F16:
    return ("__half2float(" + X + ")").str();
  case DType::BF16:
    return ("__bfloat162float(" + X + ")").str();
  case DType::I8:
  case DType::U8:
  case DType::I16:
  case DType::U16:
    return ("(int)" + X).str();
  default:
    return X.str();
  }
}

std::string storeExpr(DType T, llvm::StringRef V) {
  switch (T) {
  case DType::F16:
    return ("__float2half_rn(" + V + ")").str();
  case DType::BF16:
    return ("__float2bfloat16_rn(" + V + ")").str();
  case DType::I8:
  case DType::U8:
  case DType::I16:
  case DType::U16:
    return ("(" + cudaStorageTypeName(T).str() + ")(" + V + ")").str();
  default:
    return V.str();
  }
}

std::string castToStorage(DType From, DType To, llvm::StringRef V) {
  std::string X = "(" + V.str() + ")";
  bool FromFP = isFloat(From);
  if (To == DType::Bool)
    return From == DType::Bool
               ? X
               : "(" + X + " != (" + computeTypeName(From).str() + ")0)";
  switch (To) {
  case DType::F16:
    if (From == DType::F64)
      return "__double2half(" + X + ")";
    return FromFP ? "__float2half_rn(" + X + ")"
                  : "__double2half((double)" + X + ")";
  case DType::BF16:
    if (From == DType::F64)
      return "__double2bfloat16(" + X + ")";
    return FromFP ? "__float2bfloat16_rn(" + X + ")"
                  : "__double2bfloat16((double)" + X + ")";
  case DType::F32:
    return "(float)" + X;
  case DType::F64:
    return "(double)" + X;
  default:
    break;
  }
  // Integer targets. Floats truncate toward zero through a 64-bit integer
  // (the hardware conversion maps NaN to 0 and saturates at the int64
  // range), then wrap to the target width like numpy.
  std::string T = cudaStorageTypeName(To).str();
  if (!FromFP)
    return "(" + T + ")" + X;
  if (To == DType::U64)
    return "(" + X + " < 0 ? (unsigned long long)(long long)" + X +
           " : (unsigned long long)" + X + ")";
  return "(" + T + ")(long long)" + X;
}

std::string computeLiteral(DType T, double V) {
  DType C = computeDType(T);
  switch (C) {
  case DType::F32: {
    float F = float(V);
    if (std::isnan(F))
      return "__int_as_float(0x7fc00000)";
    if (std::isinf(F))
      return F > 0 ? "__int_as_float(0x7f800000)"
                   : "__int_as_float((int)0xff800000)";
    return "(" + hexDouble(double(F)) + "f)";
  }
  case DType::F64:
    if (std::isnan(V))
      return "__longlong_as_double(0x7ff8000000000000LL)";
    if (std::isinf(V))
      return V > 0 ? "__longlong_as_double(0x7ff0000000000000LL)"
                   : "__longlong_as_double((long long)0xfff0000000000000ULL)";
    return "(" + hexDouble(V) + ")";
  case DType::Bool:
    return V != 0 ? "true" : "false";
  case DType::I32: {
    long long I = (long long)V;
    if (I == INT32_MIN)
      return "(-2147483647 - 1)";
    return "(" + std::to_string(I) + ")";
  }
  case DType::U32:
    return "(" + std::to_string((unsigned long long)V) + "U)";
  case DType::I64: {
    long long I = (long long)V;
    if (I == INT64_MIN)
      return "(-9223372036854775807LL - 1)";
    return "(" + std::to_string(I) + "LL)";
  }
  case DType::U64:
    return "(" + std::to_string((unsigned long long)V) + "ULL)";
  default:
    break;
  }
  assert(false && "no literal for this dtype");
  return "0";
}

std::string storageLiteral(DType T, double V) {
  if (T == DType::F16 || T == DType::BF16) {
    uint16_t Bits =
        T == DType::F16 ? floatToHalf(float(V)) : floatToBF16(float(V));
    char Buf[16];
    std::snprintf(Buf, sizeof(Buf), "0x%04x", unsigned(Bits));
    return std::string(T == DType::F16 ? "__ushort_as_half"
                                       : "__ushort_as_bfloat16") +
           "((unsigned short)" + Buf + ")";
  }
  if (T == DType::F32 || T == DType::F64 || T == DType::Bool ||
      computeDType(T) == T)
    return computeLiteral(T, V);
  return "(" + cudaStorageTypeName(T).str() + ")" + computeLiteral(T, V);
}

std::string lowestLiteral(DType T) {
  switch (computeDType(T)) {
  case DType::F32:
  case DType::F64:
    return computeLiteral(T, -INFINITY);
  case DType::I32:
    switch (T) {
    case DType::I8:
      return "(-128)";
    case DType::U8:
    case DType::U16:
      return "(0)";
    case DType::I16:
      return "(-32768)";
    default:
      return "(-2147483647 - 1)";
    }
  case DType::U32:
    return "(0U)";
  case DType::I64:
    return "(-9223372036854775807LL - 1)";
  case DType::U64:
    return "(0ULL)";
  case DType::Bool:
    return "false";
  default:
    break;
  }
  assert(false && "no lowest value for this dtype");
  return "0";
}

std::string highestLiteral(DType T) {
  switch (computeDType(T)) {
  case DType::F32:
  case DType::F64:
    return computeLiteral(T, INFINITY);
  case DType::I32:
    switch (T) {
    case DType::I8:
      return "(127)";
    case DType::U8:
      return "(255)";
    case DType::I16:
      return "(32767)";
    case DType::U16:
      return "(65535)";
    default:
      return "(2147483647)";
    }
  case DType::U32:
    return "(4294967295U)";
  case DType::I64:
    return "(9223372036854775807LL)";
  case DType::U64:
    return "(18446744073709551615ULL)";
  case DType::Bool:
    return "true";
  default:
    break;
  }
  assert(false && "no highest value for this dtype");
  return "0";
}

DType exprOperandDType(const Node &N) {
  unsigned I = N.kind() == OpKind::Where ? 1 : 0;
  return N.operand(I) ? N.operand(I)->dtype() : DType::Undefined;
}

bool hasExprRule(OpKind Op, DType T) {
  unsigned C = classOf(T);
  for (const ExprRule &R : Rules)
    if (R.Op == Op && (R.Classes & C))
      return true;
  return false;
}

llvm::Expected<std::string> elementwiseExpr(const Node &N,
                                            llvm::ArrayRef<std::string> Args) {
  DType T = exprOperandDType(N);
  std::string Variant = variantOf(N);
  if (N.kind() == OpKind::Gelu && (T == DType::F16 || T == DType::BF16) &&
      (Variant == "none" || Variant == "tanh"))
    Variant = "reduced";
  const ExprRule *R = findRule(N.kind(), T, Variant);
  if (!R) {
    if (N.kind() == OpKind::Gelu && Variant != "none" && Variant != "tanh")
      return makeError(N.describe() + ": unknown approximate mode '" + Variant +
                       "'");
    return makeError(N.describe() + ": code generation does not support " +
                     N.opName() + " on " + dtypeName(T));
  }
  DType Compute = computeDType(T);
  if (isVariadicFold(N.kind())) {
    assert(!Args.empty() && "variadic op without operands");
    std::string Acc = Args[0];
    for (size_t I = 1; I < Args.size(); ++I)
      Acc = expand(R->Template, N, Compute, {Acc, Args[I]});
    return Acc;
  }
  if (N.kind() == OpKind::ApplyRowStats) {
    // Absent operands (C and Scale 1, Bias and Z 0) leave their term out.
    auto Arg = [&](size_t I) {
      return I < Args.size() ? Args[I] : std::string();
    };
    std::string E =
        Arg(0) + " - " + Arg(1) + (Arg(3).empty() ? "" : " * " + Arg(3));
    E = "(" + E + ") * " + Arg(2) + (Arg(4).empty() ? "" : " * " + Arg(4));
    for (size_t I : {5, 6})
      if (!Arg(I).empty())
        E += " + " + Arg(I);
    return "(" + E + ")";
  }
  if (N.kind() == OpKind::Clip) {
    // Absent bounds are the type's extremes.
    std::string Lo =
        Args.size() > 1 && !Args[1].empty() ? Args[1] : lowestLiteral(T);
    std::string Hi =
        Args.size() > 2 && !Args[2].empty() ? Args[2] : highestLiteral(T);
    return expand(R->Template, N, Compute, {Args[0], Lo, Hi});
  }
  return expand(R->Template, N, Compute, Args);
}

} // namespace solder
