//===- BroadcastKernels.cpp - Broadcasting elementwise reference kernels --===//
//
// Reference kernels of the elementwise ops with numpy broadcasting:
// arithmetic, Pow, Mod, PRelu, Clip, the variadic Sum/Max/Min, comparisons, the
// logical ops, Where, and inference BatchNormalization.
//
// Integer arithmetic wraps in two's complement like numpy (computed in
// unsigned types, so no undefined behaviour); integer Div truncates toward
// zero (ONNX's reference computes a / b in floating point and casts back)
// and gives 0 for a zero divisor; integer Mod by zero is an error. Max/Min
// propagate NaN like np.maximum.
//
//===----------------------------------------------------------------------===//
#include "runtime/reference/KernelUtils.h"
#include <algorithm>
#include <cmath>

namespace solder {
namespace ref {

//===----------------------------------------------------------------------===//
// Scalar semantics
//===----------------------------------------------------------------------===//

/// Unsigned type at least as wide as `unsigned`, so integer promotion never
/// turns wrapping arithmetic into signed overflow (u16 * u16).
template <typename C>
using WrapType = std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned,
                                    std::make_unsigned_t<C>>;

template <typename C> static C addOp(C A, C B) {
  if constexpr (std::is_integral_v<C>)
    return C(WrapType<C>(A) + WrapType<C>(B));
  else
    return A + B;
}
template <typename C> static C subOp(C A, C B) {
  if constexpr (std::is_integral_v<C>)
    return C(WrapType<C>(A) - WrapType<C>(B));
  else
    return A - B;
}
template <typename C> static C mulOp(C A, C B) {
  if constexpr (std::is_integral_v<C>)
    return C(WrapType<C>(A) * WrapType<C>(B));
  else
    return A * B;
}
template <typename C> static C divOp(C A, C B) {
  if constexpr (std::is_integral_v<C>) {
    if (B == 0)
      return C(0);
    if constexpr (std::is_signed_v<C>)
      if (B == C(-1)) // INT_MIN / -1 overflows: wrap instead
        return C(WrapType<C>(0) - WrapType<C>(A));
    return C(A / B);
  } else {
    return A / B;
  }
}
/// ONNX Mod: C's fmod (the dividend's sign) with Fmod, else Python's %
/// (the divisor's sign). Integer divisors are never 0 here (evalMod checks).
template <typename C> static C modOp(C A, C B, bool Fmod) {
  if constexpr (std::is_integral_v<C>) {
    assert(B != 0 && "checked by evalMod");
    if constexpr (std::is_signed_v<C>)
      if (B == C(-1)) // INT_MIN % -1 overflows; the remainder is 0
        return C(0);
    C R = C(A % B);
    if constexpr (std::is_signed_v<C>)
      if (!Fmod && R != 0 && (R < 0) != (B < 0))
        R = C(R + B); // |R| < |B| and opposite signs: no overflow
    return R;
  } else {
    assert(Fmod && "float Mod requires fmod = 1 (shape inference)");
    return std::fmod(A, B);
  }
}
template <typename C> static C maxOp(C A, C B) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(A))
      return A;
    if (std::isnan(B))
      return B;
  }
  return A < B ? B : A;
}
template <typename C> static C minOp(C A, C B) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(A))
      return A;
    if (std::isnan(B))
      return B;
  }
  return B < A ? B : A;
}

/// Integer power by squaring, wrapping; a negative exponent gives the
/// truncated real result (1, +-1 for base -1, else 0).
template <typename C, typename E> static C intPow(C Base, E Exp) {
  if constexpr (std::is_signed_v<E>) {
    if (Exp < 0) {
      if (Base == C(1))
        return C(1);
      if constexpr (std::is_signed_v<C>)
        if (Base == C(-1))
          return (Exp % 2) ? C(-1) : C(1);
      return C(0);
    }
  }
  using W = WrapType<C>;
  W Result = 1, B = W(Base);
  auto N = std::make_unsigned_t<E>(Exp);
  while (N) {
    if (N & 1)
      Result = W(Result * B);
    B = W(B * B);
    N >>= 1;
  }
  return C(Result);
}

/// One element of Pow: base of traits ATr, exponent of traits BTr.
template <typename ATr, typename BTr>
static typename ATr::Storage powOne(typename ATr::Storage X,
                                    typename BTr::Storage E) {
  using AC = typename ATr::Compute;
  using BC = typename BTr::Compute;
  AC Base = ATr::load(X);
  BC Exp = BTr::load(E);
  AC R;
  if constexpr (std::is_integral_v<AC> && std::is_integral_v<BC>)
    R = intPow(Base, Exp);
  else if constexpr (std::is_integral_v<AC>)
    R = floatToInt<AC>(std::pow(double(Base), double(Exp)));
  else if constexpr (std::is_same_v<AC, float> && std::is_same_v<BC, float>)
    // x^2 is common (variance in decomposed norms); x*x is exactly what a
    // correctly rounded pow gives.
    R = Exp == 2.0f ? Base * Base : std::pow(Base, Exp);
  else
    R = AC(std::pow(double(Base), double(Exp)));
  return ATr::store(R);
}

//===----------------------------------------------------------------------===//
// Kernel skeletons
//===----------------------------------------------------------------------===//

/// Fetches operands 0 and 1, checks they share a dtype.
static llvm::Error getSameTypePair(KernelContext &Ctx, const Tensor *&A,
                                   const Tensor *&B) {
  auto AOr = requireOperand(Ctx, 0);
  if (!AOr)
    return AOr.takeError();
  auto BOr = requireOperand(Ctx, 1);
  if (!BOr)
    return BOr.takeError();
  A = *AOr;
  B = *BOr;
  if (A->dtype() != B->dtype())
    return Ctx.error("operand types differ: " + dtypeName(A->dtype()) +
                     " and " + dtypeName(B->dtype()));
  return llvm::Error::success();
}

/// Out = F(A, B) over the broadcast shape; A and B share a dtype in Set; the
/// result has dtype OutD (Undefined: A's dtype). With OutD == Bool, F returns
/// bool; otherwise F maps two Compute values to a Compute value.
template <uint32_t Set, DType OutD = DType::Undefined, typename Fn>
static llvm::Error binaryKernel(KernelContext &Ctx, Fn &&F) {
  const Tensor *A, *B;
  if (auto E = getSameTypePair(Ctx, A, B))
    return E;
  auto DimsOr = broadcastOperandDims(Ctx, {A, B});
  if (!DimsOr)
    return DimsOr.takeError();
  const DimVector &OutDims = *DimsOr;
  return visitDType<Set>(Ctx, A->dtype(), [&](auto Tag) {
    using Tr = TraitsOf<decltype(Tag)>;
    using S = typename Tr::Storage;
    using C = typename Tr::Compute;
    if constexpr (OutD == DType::Bool) {
      Tensor Y(DType::Bool, OutDims);
      mapBinary(A->data<S>(), A->dims(), B->data<S>(), B->dims(),
                Y.mutableData<uint8_t>(), OutDims, [&](S X, S Z) {
                  return uint8_t(F(Tr::load(X), Tr::load(Z)) ? 1 : 0);
                });
      Ctx.Results[0] = std::move(Y);
    } else {
      Tensor Y(A->dtype(), OutDims);
      mapBinary(A->data<S>(), A->dims(), B->data<S>(), B->dims(),
                Y.mutableData<S>(), OutDims, [&](S X, S Z) {
                  return Tr::store(C(F(Tr::load(X), Tr::load(Z))));
                });
      Ctx.Results[0] = std::move(Y);
    }
    return llvm::Error::success();
  });
}

//===----------------------------------------------------------------------===//
// Arithmetic
//===----------------------------------------------------------------------===//

llvm::Error evalAdd(KernelContext &Ctx) {
  return binaryKernel<dtypes::Numeric>(
      Ctx, [](auto A, auto B) { return addOp(A, B); });
}

llvm::Error evalSub(KernelContext &Ctx) {
  return binaryKernel<dtypes::Numeric>(
      Ctx, [](auto A, auto B) { return subOp(A, B); });
}

llvm::Error evalMul(KernelContext &Ctx) {
  return binaryKernel<dtypes::Numeric>(
      Ctx, [](auto A, auto B) { return mulOp(A, B); });
}

llvm::Error evalDiv(KernelContext &Ctx) {
  return binaryKernel<dtypes::Numeric>(
      Ctx, [](auto A, auto B) { return divOp(A, B); });
}

llvm::Error evalPow(KernelContext &Ctx) {
  // The exponent may have another dtype; the result has the base's.
  auto AOr = requireOperand(Ctx, 0);
  if (!AOr)
    return AOr.takeError();
  auto BOr = requireOperand(Ctx, 1);
  if (!BOr)
    return BOr.takeError();
  const Tensor &A = **AOr, &B = **BOr;
  auto DimsOr = broadcastOperandDims(Ctx, {&A, &B});
  if (!DimsOr)
    return DimsOr.takeError();
  const DimVector &OutDims = *DimsOr;
  return visitDType<dtypes::Numeric>(Ctx, A.dtype(), [&](auto ATag) {
    return visitDType<dtypes::Numeric>(Ctx, B.dtype(), [&](auto BTag) {
      using ATr = TraitsOf<decltype(ATag)>;
      using BTr = TraitsOf<decltype(BTag)>;
      using AS = typename ATr::Storage;
      using BS = typename BTr::Storage;
      Tensor Y(A.dtype(), OutDims);
      mapBinary(A.data<AS>(), A.dims(), B.data<BS>(), B.dims(),
                Y.mutableData<AS>(), OutDims,
                [](AS X, BS E) { return powOne<ATr, BTr>(X, E); });
      Ctx.Results[0] = std::move(Y);
      return llvm::Error::success();
    });
  });
}

llvm::Error evalMod(KernelContext &Ctx) {
  const Tensor *A, *B;
  if (auto E = getSameTypePair(Ctx, A, B))
    return E;
  bool Fmod = Ctx.attrs().getInt("fmod", 0) != 0;
  if (isFloat(A->dtype()) && !Fmod)
    return Ctx.error("fmod must be 1 for " + dtypeName(A->dtype()) +
                     " operands");
  // Every divisor element is used unless the result is empty.
  if (isInteger(B->dtype()) && A->numElements() > 0)
    for (int64_t I = 0, E = B->numElements(); I < E; ++I)
      if (B->getInt64(I) == 0)
        return Ctx.error("integer division by zero (divisor element " +
                         llvm::Twine(I) + ")");
  return binaryKernel<dtypes::Numeric>(
      Ctx, [Fmod](auto X, auto Y) { return modOp(X, Y, Fmod); });
}

llvm::Error evalPRelu(KernelContext &Ctx) {
  const Tensor *X, *Slope;
  if (auto E = getSameTypePair(Ctx, X, Slope))
    return E;
  // The slope broadcasts to X (unidirectionally): the result keeps X's shape.
  DimVector OutDims;
  if (!broadcastDims({X->dims(), Slope->dims()}, OutDims) ||
      llvm::ArrayRef<int64_t>(OutDims) != X->dims())
    return Ctx.error("slope does not broadcast to the input's shape");
  return binaryKernel<dtypes::Numeric>(Ctx, [](auto A, auto S) {
    using C = decltype(A);
    return A < C(0) ? mulOp(S, A) : A;
  });
}

llvm::Error evalClip(KernelContext &Ctx) {
  auto XOr = requireOperand(Ctx, 0);
  if (!XOr)
    return XOr.takeError();
  const Tensor &X = **XOr;
  for (unsigned I = 1; I < 3; ++I) {
    const Tensor *Bound = Ctx.in(I);
    if (!Bound)
      continue;
    if (Bound->dtype() != X.dtype())
      return Ctx.error(llvm::Twine(I == 1 ? "min" : "max") + " has type " +
                       dtypeName(Bound->dtype()) + ", input has " +
                       dtypeName(X.dtype()));
    if (Bound->numElements() != 1)
      return Ctx.error(llvm::Twine(I == 1 ? "min" : "max") +
                       " must be a scalar");
  }
  return visitDType<dtypes::Numeric>(Ctx, X.dtype(), [&](auto Tag) {
    using Tr = TraitsOf<decltype(Tag)>;
    using S = typename Tr::Storage;
    using C = typename Tr::Compute;
    C Lo = Ctx.in(1) ? Tr::load(Ctx.in(1)->data<S>()[0])
                     : std::numeric_limits<C>::lowest();
    C Hi = Ctx.in(2) ? Tr::load(Ctx.in(2)->data<S>()[0])
                     : std::numeric_limits<C>::max();
    if constexpr (std::is_floating_point_v<C>) {
      // Absent bounds must not clip infinities.
      if (!Ctx.in(1))
        Lo = -std::numeric_limits<C>::infinity();
      if (!Ctx.in(2))
        Hi = std::numeric_limits<C>::infinity();
    }
    Tensor Y(X.dtype(), X.dims());
    // min(max(x, lo), hi): with lo > hi every element becomes hi (ONNX);
    // a NaN input stays NaN.
    mapUnary(X.data<S>(), Y.mutableData<S>(), X.numElements(), [&](S V) {
      C A = Tr::load(V);
      A = A < Lo ? Lo : A;
      A = Hi < A ? Hi : A;
      return Tr::store(A);
    });
    Ctx.Results[0] = std::move(Y);
    return llvm::Error::success();
  });
}

/// Folds the variadic operands with F pairwise, broadcasting as it goes.
template <typename Fn>
static llvm::Error variadicKernel(KernelContext &Ctx, Fn &&F) {
  if (Ctx.numIn() == 0)
    return Ctx.error("needs at least one operand");
  llvm::SmallVector<const Tensor *, 4> Ins;
  for (unsigned I = 0; I < Ctx.numIn(); ++I) {
    auto TOr = requireOperand(Ctx, I);
    if (!TOr)
      return TOr.takeError();
    Ins.push_back(*TOr);
  }
  for (const Tensor *T : Ins)
    if (T->dtype() != Ins[0]->dtype())
      return Ctx.error("operand types differ: " + dtypeName(Ins[0]->dtype()) +
                       " and " + dtypeName(T->dtype()));
  auto DimsOr = broadcastOperandDims(Ctx, Ins);
  if (!DimsOr)
    return DimsOr.takeError();
  return visitDType<dtypes::Numeric>(Ctx, Ins[0]->dtype(), [&](auto Tag) {
    using Tr = TraitsOf<decltype(Tag)>;
    using S = typename Tr::Storage;
    using C = typename Tr::Compute;
    Tensor Acc = *Ins[0];
    if (Ins.size() == 1) {
      // A single operand is returned as is (shared storage).
      Ctx.Results[0] = Acc;
      return llvm::Error::success();
    }
    for (size_t I = 1; I < Ins.size(); ++I) {
      DimVector Dims;
      bool Ok = broadcastDims({Acc.dims(), Ins[I]->dims()}, Dims);
      assert(Ok && "checked with all operands above");
      (void)Ok;
      Tensor Next(Acc.dtype(), Dims);
      mapBinary(Acc.data<S>(), Acc.dims(), Ins[I]->data<S>(), Ins[I]->dims(),
                Next.mutableData<S>(), Dims, [&](S X, S Z) {
                  return Tr::store(C(F(Tr::load(X), Tr::load(Z))));
                });
      Acc = std::move(Next);
    }
    Ctx.Results[0] = std::move(Acc);
    return llvm::Error::success();
  });
}

llvm::Error evalSum(KernelContext &Ctx) {
  return variadicKernel(Ctx, [](auto A, auto B) { return addOp(A, B); });
}

llvm::Error evalMax(KernelContext &Ctx) {
  return variadicKernel(Ctx, [](auto A, auto B) { return maxOp(A, B); });
}

llvm::Error evalMin(KernelContext &Ctx) {
  return variadicKernel(Ctx, [](auto A, auto B) { return minOp(A, B); });
}

//===----------------------------------------------------------------------===//
// Comparisons and logic
//===----------------------------------------------------------------------===//

llvm::Error evalEqual(KernelContext &Ctx) {
  return binaryKernel<dtypes::All, DType::Bool>(
      Ctx, [](auto A, auto B) { return A == B; });
}

llvm::Error evalLess(KernelContext &Ctx) {
  return binaryKernel<dtypes::Numeric, DType::Bool>(
      Ctx, [](auto A, auto B) { return A < B; });
}

llvm::Error evalGreater(KernelContext &Ctx) {
  return binaryKernel<dtypes::Numeric, DType::Bool>(
      Ctx, [](auto A, auto B) { return A > B; });
}

llvm::Error evalGreaterOrEqual(KernelContext &Ctx) {
  return binaryKernel<dtypes::Numeric, DType::Bool>(
      Ctx, [](auto A, auto B) { return A >= B; });
}

llvm::Error evalLessOrEqual(KernelContext &Ctx) {
  return binaryKernel<dtypes::Numeric, DType::Bool>(
      Ctx, [](auto A, auto B) { return A <= B; });
}

llvm::Error evalAnd(KernelContext &Ctx) {
  return binaryKernel<dtypes::Bool, DType::Bool>(
      Ctx, [](bool A, bool B) { return A && B; });
}

llvm::Error evalOr(KernelContext &Ctx) {
  return binaryKernel<dtypes::Bool, DType::Bool>(
      Ctx, [](bool A, bool B) { return A || B; });
}

llvm::Error evalWhere(KernelContext &Ctx) {
  const Tensor *Ops[3];
  for (unsigned I = 0; I < 3; ++I) {
    auto TOr = requireOperand(Ctx, I);
    if (!TOr)
      return TOr.takeError();
    Ops[I] = *TOr;
  }
  const Tensor &Cond = *Ops[0], &X = *Ops[1], &Y = *Ops[2];
  if (Cond.dtype() != DType::Bool)
    return Ctx.error("condition must be bool, got " + dtypeName(Cond.dtype()));
  if (X.dtype() != Y.dtype())
    return Ctx.error("operand types differ: " + dtypeName(X.dtype()) + " and " +
                     dtypeName(Y.dtype()));
  auto DimsOr = broadcastOperandDims(Ctx, {&Cond, &X, &Y});
  if (!DimsOr)
    return DimsOr.takeError();
  const DimVector &OutDims = *DimsOr;
  return visitDType<dtypes::All>(Ctx, X.dtype(), [&](auto Tag) {
    using S = typename TraitsOf<decltype(Tag)>::Storage;
    Tensor Out(X.dtype(), OutDims);
    mapTernary(Cond.data<uint8_t>(), Cond.dims(), X.data<S>(), X.dims(),
               Y.data<S>(), Y.dims(), Out.mutableData<S>(), OutDims,
               [](uint8_t C, S A, S B) { return C ? A : B; });
    Ctx.Results[0] = std::move(Out);
    return llvm::Error::success();
  });
}

//===----------------------------------------------------------------------===//
// ApplyRowStats
//===----------------------------------------------------------------------===//

llvm::Error evalApplyRowStats(KernelContext &Ctx) {
  // Operands 3..6 may be absent: C and Scale 1, Bias and Z 0.
  std::vector<const Tensor *> Ops;
  for (unsigned I = 0; I < 3; ++I) {
    auto TOr = requireOperand(Ctx, I);
    if (!TOr)
      return TOr.takeError();
    Ops.push_back(*TOr);
  }
  const double Absent[] = {1, 1, 0, 0};
  for (unsigned I = 3; I < 7; ++I)
    Ops.push_back(Ctx.in(I));
  const Tensor &Y = *Ops[0];
  if (!isFloat(Y.dtype()))
    return Ctx.error("expects a float Y, got " + dtypeName(Y.dtype()));
  std::vector<const Tensor *> Present;
  for (const Tensor *T : Ops)
    if (T)
      Present.push_back(T);
  auto DimsOr = broadcastOperandDims(Ctx, Present);
  if (!DimsOr)
    return DimsOr.takeError();
  if (llvm::ArrayRef<int64_t>(*DimsOr) != Y.dims())
    return Ctx.error("an operand broadcasts Y to another shape");
  // Operand K's offsets walk with the output's (index 0): an absent one
  // stays on its default.
  std::array<DimVector, 8> Strides;
  Strides[0] = contiguousStrides(Y.dims());
  for (size_t J = 0; J < Ops.size(); ++J)
    Strides[J + 1] = Ops[J] ? broadcastStrides(Ops[J]->dims(), Y.dims())
                            : DimVector(Y.dims().size(), 0);
  Tensor R(Y.dtype(), Y.dims());
  StridedLoop<8>(Y.dims(), Strides)
      .forEachRow([&](const std::array<int64_t, 8> &Off,
                      const std::array<int64_t, 8> &St, int64_t Len) {
        double V[7];
        for (int64_t I = 0; I < Len; ++I) {
          for (size_t J = 0; J < Ops.size(); ++J)
            V[J] = Ops[J] ? Ops[J]->getDouble(Off[J + 1] + I * St[J + 1])
                          : Absent[J - 3];
          R.setDouble(Off[0] + I * St[0],
                      (V[0] - V[1] * V[3]) * V[2] * V[4] + V[5] + V[6]);
        }
      });
  Ctx.Results[0] = std::move(R);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// BatchNormalization (inference)
//===----------------------------------------------------------------------===//

llvm::Error evalBatchNormalization(KernelContext &Ctx) {
  const Tensor *Ops[5];
  for (unsigned I = 0; I < 5; ++I) {
    auto TOr = requireOperand(Ctx, I);
    if (!TOr)
      return TOr.takeError();
    Ops[I] = *TOr;
  }
  const Tensor &X = *Ops[0];
  if (X.rank() < 2)
    return Ctx.error("input must have rank >= 2 (N x C x ...), got rank " +
                     llvm::Twine(X.rank()));
  int64_t N = X.dims()[0], Channels = X.dims()[1];
  int64_t Inner = 1;
  for (unsigned I = 2; I < X.rank(); ++I)
    Inner *= X.dims()[I];
  static const char *Names[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (unsigned I = 1; I < 5; ++I) {
    if (!isFloat(Ops[I]->dtype()))
      return Ctx.error(llvm::Twine(Names[I]) + " must be a float tensor");
    if (Ops[I]->rank() != 1 || Ops[I]->dims()[0] != Channels)
      return Ctx.error(llvm::Twine(Names[I]) + " must have shape [" +
                       llvm::Twine(Channels) + "]");
  }
  double Epsilon = Ctx.attrs().getFloat("epsilon", 1e-5f);
  // y = (x - mean) / sqrt(var + eps) * scale + B  ==  x * A[c] + Shift[c].
  llvm::SmallVector<double, 64> Mul(Channels), Shift(Channels);
  for (int64_t C = 0; C < Channels; ++C) {
    double Scale = Ops[1]->getDouble(C), Bias = Ops[2]->getDouble(C);
    double Mean = Ops[3]->getDouble(C), Var = Ops[4]->getDouble(C);
    Mul[C] = Scale / std::sqrt(Var + Epsilon);
    Shift[C] = Bias - Mean * Mul[C];
  }
  return visitDType<dtypes::Float>(Ctx, X.dtype(), [&](auto Tag) {
    using Tr = TraitsOf<decltype(Tag)>;
    using S = typename Tr::Storage;
    using C = typename Tr::Compute;
    Tensor Y(X.dtype(), X.dims());
    const S *In = X.data<S>();
    S *Out = Y.mutableData<S>();
    for (int64_t B = 0; B < N; ++B)
      for (int64_t Ch = 0; Ch < Channels; ++Ch) {
        double M = Mul[Ch], Sh = Shift[Ch];
        int64_t Base = (B * Channels + Ch) * Inner;
        for (int64_t I = 0; I < Inner; ++I)
          Out[Base + I] = Tr::store(C(double(Tr::load(In[Base + I])) * M + Sh));
      }
    Ctx.Results[0] = std::move(Y);
    return llvm::Error::success();
  });
}

} // namespace ref
} // namespace solder
