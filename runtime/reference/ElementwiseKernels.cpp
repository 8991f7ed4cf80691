//===- ElementwiseKernels.cpp - Unary elementwise reference kernels -------===//
//
// Reference kernels of the one-operand elementwise ops (activations, math
// and trigonometric functions, rounding, Sign, Not, the IsNaN/IsInf
// predicates) and of inference-mode Dropout. Each kernel is a generic
// lambda over the op's compute type: float for f32/f16/bf16 (16-bit results
// are rounded once per element, as numpy does), double for f64, the integer
// type itself for integer ops.
//
//===----------------------------------------------------------------------===//
#include "runtime/reference/KernelUtils.h"
#include <algorithm>
#include <cmath>
#include <cstring>

namespace solder {
namespace ref {

/// Y = F(X) elementwise for X's dtype in Set; F maps Compute -> Compute.
template <uint32_t Set, typename Fn>
static llvm::Error unaryKernel(KernelContext &Ctx, Fn &&F) {
  auto XOr = requireOperand(Ctx, 0);
  if (!XOr)
    return XOr.takeError();
  const Tensor &X = **XOr;
  return visitDType<Set>(Ctx, X.dtype(), [&](auto Tag) {
    using Tr = TraitsOf<decltype(Tag)>;
    using S = typename Tr::Storage;
    using C = typename Tr::Compute;
    Tensor Y(X.dtype(), X.dims());
    mapUnary(X.data<S>(), Y.mutableData<S>(), X.numElements(),
             [&](S V) { return Tr::store(C(F(Tr::load(V)))); });
    Ctx.Results[0] = std::move(Y);
    return llvm::Error::success();
  });
}

/// Float-only unary kernel.
template <typename Fn>
static llvm::Error floatKernel(KernelContext &Ctx, Fn &&F) {
  return unaryKernel<dtypes::Float>(Ctx, std::forward<Fn>(F));
}

llvm::Error evalRelu(KernelContext &Ctx) {
  return unaryKernel<dtypes::Float | dtypes::SignedInt>(Ctx, [](auto X) {
    using C = decltype(X);
    return X > C(0) ? X : C(0);
  });
}

llvm::Error evalLeakyRelu(KernelContext &Ctx) {
  float Alpha = Ctx.attrs().getFloat("alpha", 0.01f);
  return floatKernel(Ctx, [Alpha](auto X) {
    using C = decltype(X);
    return X >= C(0) ? X : C(Alpha) * X;
  });
}

llvm::Error evalElu(KernelContext &Ctx) {
  float Alpha = Ctx.attrs().getFloat("alpha", 1.0f);
  return floatKernel(Ctx, [Alpha](auto X) {
    using C = decltype(X);
    return X >= C(0) ? X : C(Alpha) * (std::exp(X) - C(1));
  });
}

llvm::Error evalSelu(KernelContext &Ctx) {
  float Alpha = Ctx.attrs().getFloat("alpha", 1.67326319217681884765625f);
  float Gamma = Ctx.attrs().getFloat("gamma", 1.05070102214813232421875f);
  return floatKernel(Ctx, [Alpha, Gamma](auto X) {
    using C = decltype(X);
    return X > C(0) ? C(Gamma) * X
                    : C(Gamma) * (C(Alpha) * std::exp(X) - C(Alpha));
  });
}

llvm::Error evalSigmoid(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) {
    using C = decltype(X);
    // Two branches so exp never overflows.
    if (X >= C(0))
      return C(1) / (C(1) + std::exp(-X));
    C E = std::exp(X);
    return E / (C(1) + E);
  });
}

llvm::Error evalTanh(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) { return std::tanh(X); });
}

llvm::Error evalHardSigmoid(KernelContext &Ctx) {
  float Alpha = Ctx.attrs().getFloat("alpha", 0.2f);
  float Beta = Ctx.attrs().getFloat("beta", 0.5f);
  return floatKernel(Ctx, [Alpha, Beta](auto X) {
    using C = decltype(X);
    return std::max(C(0), std::min(C(1), C(Alpha) * X + C(Beta)));
  });
}

llvm::Error evalHardSwish(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) {
    using C = decltype(X);
    return X * std::max(C(0), std::min(C(1), X / C(6) + C(0.5)));
  });
}

llvm::Error evalSoftplus(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) {
    using C = decltype(X);
    // log(1 + exp(x)) without overflow for large x.
    return X > C(0) ? X + std::log1p(std::exp(-X)) : std::log1p(std::exp(X));
  });
}

llvm::Error evalSoftsign(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) {
    using C = decltype(X);
    return X / (C(1) + std::abs(X));
  });
}

llvm::Error evalErf(KernelContext &Ctx) {
  // ONNX allows integer Erf too: erf of an integer, truncated back.
  return unaryKernel<dtypes::Numeric>(Ctx, [](auto X) {
    using C = decltype(X);
    if constexpr (std::is_floating_point_v<C>)
      return std::erf(X);
    else
      return C(std::erf(double(X)));
  });
}

llvm::Error evalGelu(KernelContext &Ctx) {
  std::string Approx = Ctx.attrs().getString("approximate", "none");
  if (Approx == "none")
    return floatKernel(Ctx, [](auto X) {
      using C = decltype(X);
      return C(0.5) * X * (C(1) + std::erf(X * C(0.70710678118654752440)));
    });
  if (Approx == "tanh")
    return floatKernel(Ctx, [](auto X) {
      using C = decltype(X);
      const C K = C(0.79788456080286535588 /* sqrt(2/pi) */);
      return C(0.5) * X * (C(1) + std::tanh(K * (X + C(0.044715) * X * X * X)));
    });
  return Ctx.error("unknown approximate mode '" + Approx + "'");
}

llvm::Error evalSqrt(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) { return std::sqrt(X); });
}

llvm::Error evalExp(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) { return std::exp(X); });
}

llvm::Error evalLog(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) { return std::log(X); });
}

llvm::Error evalNeg(KernelContext &Ctx) {
  return unaryKernel<dtypes::Float | dtypes::SignedInt>(Ctx, [](auto X) {
    using C = decltype(X);
    if constexpr (std::is_integral_v<C>)
      // Two's-complement wrap (numpy: -INT_MIN == INT_MIN), no UB.
      return C(std::make_unsigned_t<C>(0) - std::make_unsigned_t<C>(X));
    else
      return -X;
  });
}

llvm::Error evalReciprocal(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) {
    using C = decltype(X);
    return C(1) / X;
  });
}

llvm::Error evalAbs(KernelContext &Ctx) {
  return unaryKernel<dtypes::Numeric>(Ctx, [](auto X) {
    using C = decltype(X);
    if constexpr (std::is_unsigned_v<C>)
      return X;
    else if constexpr (std::is_integral_v<C>)
      return X < 0 ? C(std::make_unsigned_t<C>(0) - std::make_unsigned_t<C>(X))
                   : X;
    else
      return std::abs(X);
  });
}

llvm::Error evalFloor(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) { return std::floor(X); });
}

llvm::Error evalCeil(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) { return std::ceil(X); });
}

llvm::Error evalRound(KernelContext &Ctx) {
  // Halves go to the even neighbour (numpy.round): std::nearbyint in the
  // default rounding mode, which the reference never changes.
  return floatKernel(Ctx, [](auto X) { return std::nearbyint(X); });
}

llvm::Error evalSign(KernelContext &Ctx) {
  return unaryKernel<dtypes::Numeric>(Ctx, [](auto X) {
    using C = decltype(X);
    if (X > C(0))
      return C(1);
    if constexpr (std::is_signed_v<C>)
      if (X < C(0))
        return C(-1);
    // +-0 gives +0 (numpy.sign); NaN stays NaN.
    return X == C(0) ? C(0) : X;
  });
}

llvm::Error evalSin(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) { return std::sin(X); });
}

llvm::Error evalCos(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) { return std::cos(X); });
}

llvm::Error evalTan(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) { return std::tan(X); });
}

llvm::Error evalAsin(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) { return std::asin(X); });
}

llvm::Error evalAcos(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) { return std::acos(X); });
}

llvm::Error evalAtan(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) { return std::atan(X); });
}

llvm::Error evalSinh(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) { return std::sinh(X); });
}

llvm::Error evalCosh(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) { return std::cosh(X); });
}

llvm::Error evalAsinh(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) { return std::asinh(X); });
}

llvm::Error evalAcosh(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) { return std::acosh(X); });
}

llvm::Error evalAtanh(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) { return std::atanh(X); });
}

llvm::Error evalMish(KernelContext &Ctx) {
  return floatKernel(Ctx, [](auto X) {
    using C = decltype(X);
    // x * tanh(softplus(x)), softplus as in evalSoftplus (no overflow).
    C Sp = X > C(0) ? X + std::log1p(std::exp(-X)) : std::log1p(std::exp(X));
    return X * std::tanh(Sp);
  });
}

/// Y = Pred(X) as bools, for float X.
template <typename Fn>
static llvm::Error floatPredicateKernel(KernelContext &Ctx, Fn &&Pred) {
  auto XOr = requireOperand(Ctx, 0);
  if (!XOr)
    return XOr.takeError();
  const Tensor &X = **XOr;
  return visitDType<dtypes::Float>(Ctx, X.dtype(), [&](auto Tag) {
    using Tr = TraitsOf<decltype(Tag)>;
    using S = typename Tr::Storage;
    Tensor Y(DType::Bool, X.dims());
    mapUnary(X.data<S>(), Y.mutableData<uint8_t>(), X.numElements(),
             [&](S V) { return uint8_t(Pred(Tr::load(V)) ? 1 : 0); });
    Ctx.Results[0] = std::move(Y);
    return llvm::Error::success();
  });
}

llvm::Error evalIsNaN(KernelContext &Ctx) {
  return floatPredicateKernel(Ctx, [](auto X) { return std::isnan(X); });
}

llvm::Error evalIsInf(KernelContext &Ctx) {
  bool Neg = Ctx.attrs().getInt("detect_negative", 1) != 0;
  bool Pos = Ctx.attrs().getInt("detect_positive", 1) != 0;
  return floatPredicateKernel(
      Ctx, [Neg, Pos](auto X) { return std::isinf(X) && (X > 0 ? Pos : Neg); });
}

llvm::Error evalNot(KernelContext &Ctx) {
  return unaryKernel<dtypes::Bool>(Ctx, [](bool X) { return !X; });
}

llvm::Error evalDropout(KernelContext &Ctx) {
  auto XOr = requireOperand(Ctx, 0);
  if (!XOr)
    return XOr.takeError();
  const Tensor &X = **XOr;
  // Inference only: training mode with a non-zero ratio drops random
  // elements, which a deterministic reference cannot reproduce.
  if (const Tensor *Training = Ctx.in(2)) {
    if (Training->numElements() != 1 || Training->dtype() != DType::Bool)
      return Ctx.error("training_mode must be a bool scalar");
    double Ratio = 0.5;
    if (const Tensor *R = Ctx.in(1)) {
      if (R->numElements() != 1)
        return Ctx.error("ratio must be a scalar");
      Ratio = R->getDouble(0);
    }
    if (Training->getDouble(0) != 0 && Ratio != 0)
      return Ctx.error("training mode with a non-zero ratio is not supported");
  }
  Ctx.Results[0] = X; // shares the storage; tensors are immutable
  if (Ctx.Results.size() > 1 && Ctx.N.result(1)) {
    Tensor Mask(DType::Bool, X.dims());
    if (Mask.byteSize())
      std::memset(Mask.mutableRawData(), 1, Mask.byteSize());
    Ctx.Results[1] = std::move(Mask);
  }
  return llvm::Error::success();
}

} // namespace ref
} // namespace solder
