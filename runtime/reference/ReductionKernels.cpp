//===- ReductionKernels.cpp - Reduction and normalization kernels ---------===//
//
// Reference kernels of the Reduce* family (Sum, Mean, Max, Min, Prod, L1,
// L2, LogSum, LogSumExp, SumSquare; axes operand, keepdims,
// noop_with_empty_axes), Softmax/LogSoftmax (opset-13 semantics:
// normalize along one axis) and LayerNormalization.
//
// Reductions walk the input once in memory order and accumulate into an
// output-sized buffer (double for floats, 64-bit for integers), so any set of
// axes costs one pass. Row statistics are kept in double.
//
//===----------------------------------------------------------------------===//
#include "ir/ReduceKind.h"
#include "runtime/reference/KernelUtils.h"
#include <algorithm>
#include <cmath>
#include <vector>

namespace solder {
namespace ref {

//===----------------------------------------------------------------------===//
// Reduce*
//===----------------------------------------------------------------------===//

namespace {
/// The accumulator of a compute type: double for floats, 64-bit integers of
/// the same signedness for integers and bools.
template <typename C>
using AccType = std::conditional_t<
    std::is_floating_point_v<C>, double,
    std::conditional_t<std::is_signed_v<C>, int64_t, uint64_t>>;
} // namespace

template <ReduceKind Kind, typename A> static A reduceInit() {
  constexpr bool IsFloat = std::is_floating_point_v<A>;
  if constexpr (Kind == ReduceKind::Max)
    return IsFloat ? -std::numeric_limits<A>::infinity()
                   : std::numeric_limits<A>::lowest();
  if constexpr (Kind == ReduceKind::Min)
    return IsFloat ? std::numeric_limits<A>::infinity()
                   : std::numeric_limits<A>::max();
  if constexpr (Kind == ReduceKind::Prod)
    return A(1);
  return A(0);
}

/// What one element contributes: |v| for L1, v*v for L2 and SumSquare
/// (integers in unsigned arithmetic, so they wrap like numpy, no UB).
template <ReduceKind Kind, typename A> static A reduceMap(A V) {
  if constexpr (Kind == ReduceKind::L1) {
    if constexpr (std::is_floating_point_v<A>)
      return std::fabs(V);
    else if constexpr (std::is_signed_v<A>)
      return V < 0 ? A(0 - std::make_unsigned_t<A>(V)) : V;
    else
      return V;
  } else if constexpr (Kind == ReduceKind::L2 ||
                       Kind == ReduceKind::SumSquare) {
    if constexpr (std::is_floating_point_v<A>)
      return V * V;
    else
      return A(std::make_unsigned_t<A>(V) * std::make_unsigned_t<A>(V));
  }
  return V;
}

template <ReduceKind Kind, typename A> static A reduceStep(A Acc, A V) {
  if constexpr (Kind == ReduceKind::Max || Kind == ReduceKind::Min) {
    if constexpr (std::is_floating_point_v<A>)
      if (std::isnan(Acc) || std::isnan(V)) // NaN propagates, as np.max
        return std::numeric_limits<A>::quiet_NaN();
    if constexpr (Kind == ReduceKind::Max)
      return V > Acc ? V : Acc;
    else
      return V < Acc ? V : Acc;
  } else if constexpr (std::is_floating_point_v<A>) {
    return Kind == ReduceKind::Prod ? Acc * V : Acc + V;
  } else {
    using U = std::make_unsigned_t<A>; // wraps like numpy, no UB
    return Kind == ReduceKind::Prod ? A(U(Acc) * U(V)) : A(U(Acc) + U(V));
  }
}

/// The final value of an output from its accumulator; Count is the number
/// of reduced elements, Shift LogSumExp's per-output maximum.
template <ReduceKind Kind, typename A>
static double reduceFinish(A Acc, int64_t Count, double Shift) {
  double D = double(Acc);
  switch (Kind) {
  case ReduceKind::Mean:
    return D / double(Count); // an empty reduction: 0/0, NaN
  case ReduceKind::L2:
    return std::sqrt(D);
  case ReduceKind::LogSum:
    return std::log(D); // log(0) = -inf for an empty reduction
  case ReduceKind::LogSumExp:
    return Shift + std::log(D);
  default:
    return D;
  }
}

/// Folds every element of X into its output's accumulator: Acc has the
/// layout of AccDims (X's dims with reduced ones set to 1) and Fold(acc, v,
/// i) returns the new accumulator of output i.
template <typename Tr, typename A, typename FoldFn>
static void foldInto(const Tensor &X, const DimVector &AccDims,
                     std::vector<A> &Acc, FoldFn Fold) {
  using S = typename Tr::Storage;
  const S *In = X.data<S>();
  StridedLoop<2> Loop(X.dims(), {contiguousStrides(X.dims()),
                                 broadcastStrides(AccDims, X.dims())});
  Loop.forEachRow([&](const std::array<int64_t, 2> &Off,
                      const std::array<int64_t, 2> &St, int64_t Len) {
    const S *P = In + Off[0];
    for (int64_t J = 0; J < Len; ++J) {
      int64_t Q = Off[1] + J * St[1];
      Acc[Q] = Fold(Acc[Q], A(Tr::load(P[J * St[0]])), Q);
    }
  });
}

template <ReduceKind Kind, uint32_t Set>
static llvm::Error reduceKernel(KernelContext &Ctx) {
  auto XOr = requireOperand(Ctx, 0);
  if (!XOr)
    return XOr.takeError();
  const Tensor &X = **XOr;
  unsigned Rank = X.rank();
  bool KeepDims = Ctx.attrs().getInt("keepdims", 1) != 0;
  llvm::SmallVector<bool, 8> Reduced(Rank, false);
  bool HaveAxes = false;
  if (const Tensor *Axes = Ctx.in(1)) {
    if (Axes->dtype() != DType::I64 || Axes->rank() > 1)
      return Ctx.error("axes must be a 1-D i64 tensor");
    for (int64_t A : Axes->toInt64Vector()) {
      auto AxisOr = normalizeAxis(Ctx, A, Rank);
      if (!AxisOr)
        return AxisOr.takeError();
      if (Reduced[*AxisOr])
        return Ctx.error("axis " + llvm::Twine(A) + " is repeated");
      Reduced[*AxisOr] = true;
      HaveAxes = true;
    }
  }
  if (!HaveAxes) {
    if (Ctx.attrs().getInt("noop_with_empty_axes", 0) != 0) {
      Ctx.Results[0] = X;
      return llvm::Error::success();
    }
    Reduced.assign(Rank, true);
  }

  // Accumulator layout: the input dims with reduced dims set to 1.
  DimVector AccDims, OutDims;
  int64_t Count = 1; // elements per output
  for (unsigned I = 0; I < Rank; ++I) {
    AccDims.push_back(Reduced[I] ? 1 : X.dims()[I]);
    if (Reduced[I])
      Count *= X.dims()[I];
    if (!Reduced[I] || KeepDims)
      OutDims.push_back(AccDims.back());
  }

  return visitDType<Set>(Ctx, X.dtype(), [&](auto Tag) {
    using Tr = TraitsOf<decltype(Tag)>;
    using S = typename Tr::Storage;
    using C = typename Tr::Compute;
    // LogSumExp sums exp() values, which are never integers.
    using A =
        std::conditional_t<Kind == ReduceKind::LogSumExp, double, AccType<C>>;
    Tensor Y(X.dtype(), OutDims);
    int64_t OutCount = Y.numElements();
    // LogSumExp sums exp(x - max) so that large inputs do not overflow; an
    // infinite (or empty: -inf) max shifts by 0 instead, which keeps
    // log(sum) exact there (inf, or log(0) = -inf).
    std::vector<double> Shift(OutCount, 0.0);
    if constexpr (Kind == ReduceKind::LogSumExp) {
      std::vector<double> Max(OutCount, reduceInit<ReduceKind::Max, double>());
      foldInto<Tr, double>(X, AccDims, Max, [](double M, double V, int64_t) {
        return reduceStep<ReduceKind::Max>(M, V);
      });
      for (int64_t I = 0; I < OutCount; ++I)
        Shift[I] = std::isfinite(Max[I]) ? Max[I] : 0.0;
    }
    std::vector<A> Acc(OutCount, reduceInit<Kind, A>());
    foldInto<Tr, A>(X, AccDims, Acc, [&](A Q, A V, int64_t I) {
      if constexpr (Kind == ReduceKind::LogSumExp)
        return Q + A(std::exp(double(V) - Shift[I]));
      else
        return reduceStep<Kind>(Q, reduceMap<Kind>(V));
    });
    S *Out = Y.mutableData<S>();
    constexpr bool Finishes =
        Kind == ReduceKind::Mean || Kind == ReduceKind::L2 ||
        Kind == ReduceKind::LogSum || Kind == ReduceKind::LogSumExp;
    for (int64_t I = 0; I < OutCount; ++I) {
      if constexpr (Finishes) {
        // Integer sums wrap at the input's width before sqrt/log (numpy's
        // mean accumulates in float64 instead), and the results truncate,
        // like numpy's result cast back (the ONNX reference).
        A Q = Acc[I];
        if constexpr (!std::is_floating_point_v<C> &&
                      (Kind == ReduceKind::L2 || Kind == ReduceKind::LogSum))
          Q = A(C(Q));
        double R = reduceFinish<Kind>(Q, Count, Shift[I]);
        if constexpr (std::is_floating_point_v<C>)
          Out[I] = Tr::store(C(R));
        else
          Out[I] = Tr::store(floatToInt<C>(R));
      } else {
        Out[I] = Tr::store(C(Acc[I]));
      }
    }
    Ctx.Results[0] = std::move(Y);
    return llvm::Error::success();
  });
}

llvm::Error evalReduceSum(KernelContext &Ctx) {
  return reduceKernel<ReduceKind::Sum, dtypes::Numeric>(Ctx);
}

llvm::Error evalReduceMean(KernelContext &Ctx) {
  return reduceKernel<ReduceKind::Mean, dtypes::Numeric>(Ctx);
}

llvm::Error evalReduceMax(KernelContext &Ctx) {
  return reduceKernel<ReduceKind::Max, dtypes::Numeric | dtypes::Bool>(Ctx);
}

llvm::Error evalReduceMin(KernelContext &Ctx) {
  return reduceKernel<ReduceKind::Min, dtypes::Numeric | dtypes::Bool>(Ctx);
}

llvm::Error evalReduceProd(KernelContext &Ctx) {
  return reduceKernel<ReduceKind::Prod, dtypes::Numeric>(Ctx);
}

llvm::Error evalReduceL1(KernelContext &Ctx) {
  return reduceKernel<ReduceKind::L1, dtypes::Numeric>(Ctx);
}

llvm::Error evalReduceL2(KernelContext &Ctx) {
  return reduceKernel<ReduceKind::L2, dtypes::Numeric>(Ctx);
}

llvm::Error evalReduceLogSum(KernelContext &Ctx) {
  return reduceKernel<ReduceKind::LogSum, dtypes::Numeric>(Ctx);
}

llvm::Error evalReduceLogSumExp(KernelContext &Ctx) {
  return reduceKernel<ReduceKind::LogSumExp, dtypes::Numeric>(Ctx);
}

llvm::Error evalReduceSumSquare(KernelContext &Ctx) {
  return reduceKernel<ReduceKind::SumSquare, dtypes::Numeric>(Ctx);
}

//===----------------------------------------------------------------------===//
// Softmax / LogSoftmax
//===----------------------------------------------------------------------===//

/// Softmax along one axis, viewing X as [Outer, Len, Inner]. Each
/// [Len, Inner] block is processed with per-column running max and sum so
/// memory is read in order whatever the axis.
template <bool Log> static llvm::Error softmaxKernel(KernelContext &Ctx) {
  auto XOr = requireOperand(Ctx, 0);
  if (!XOr)
    return XOr.takeError();
  const Tensor &X = **XOr;
  if (X.rank() == 0)
    return Ctx.error("input must have rank >= 1");
  auto AxisOr = normalizeAxis(Ctx, Ctx.attrs().getInt("axis", -1), X.rank());
  if (!AxisOr)
    return AxisOr.takeError();
  int64_t Outer = 1, Len = X.dims()[*AxisOr], Inner = 1;
  for (unsigned I = 0; I < *AxisOr; ++I)
    Outer *= X.dims()[I];
  for (unsigned I = *AxisOr + 1; I < X.rank(); ++I)
    Inner *= X.dims()[I];
  return visitDType<dtypes::Float>(Ctx, X.dtype(), [&](auto Tag) {
    using Tr = TraitsOf<decltype(Tag)>;
    using S = typename Tr::Storage;
    using C = typename Tr::Compute;
    Tensor Y(X.dtype(), X.dims());
    const S *In = X.data<S>();
    S *Out = Y.mutableData<S>();
    std::vector<double> Max(Inner), Sum(Inner), Work(Len * Inner);
    for (int64_t O = 0; O < Outer; ++O) {
      const S *Block = In + O * Len * Inner;
      S *OutBlock = Out + O * Len * Inner;
      std::fill(Max.begin(), Max.end(),
                -std::numeric_limits<double>::infinity());
      std::fill(Sum.begin(), Sum.end(), 0.0);
      for (int64_t L = 0; L < Len; ++L)
        for (int64_t I = 0; I < Inner; ++I) {
          double V = Tr::load(Block[L * Inner + I]);
          // NaN becomes the max, so the whole column turns NaN as in numpy.
          if (!(V <= Max[I]))
            Max[I] = V;
        }
      // Work holds x - max for LogSoftmax, exp(x - max) for Softmax, so
      // exp runs once per element.
      for (int64_t L = 0; L < Len; ++L)
        for (int64_t I = 0; I < Inner; ++I) {
          double D = double(Tr::load(Block[L * Inner + I])) - Max[I];
          double E = std::exp(D);
          Work[L * Inner + I] = Log ? D : E;
          Sum[I] += E;
        }
      if (Log)
        for (int64_t I = 0; I < Inner; ++I)
          Sum[I] = std::log(Sum[I]);
      else
        for (int64_t I = 0; I < Inner; ++I)
          Sum[I] = 1.0 / Sum[I];
      for (int64_t L = 0; L < Len; ++L)
        for (int64_t I = 0; I < Inner; ++I) {
          double W = Work[L * Inner + I];
          double R = Log ? W - Sum[I] : W * Sum[I];
          OutBlock[L * Inner + I] = Tr::store(C(R));
        }
    }
    Ctx.Results[0] = std::move(Y);
    return llvm::Error::success();
  });
}

llvm::Error evalSoftmax(KernelContext &Ctx) {
  return softmaxKernel<false>(Ctx);
}

llvm::Error evalLogSoftmax(KernelContext &Ctx) {
  return softmaxKernel<true>(Ctx);
}

//===----------------------------------------------------------------------===//
// LayerNormalization
//===----------------------------------------------------------------------===//

llvm::Error evalLayerNormalization(KernelContext &Ctx) {
  auto XOr = requireOperand(Ctx, 0);
  if (!XOr)
    return XOr.takeError();
  auto ScaleOr = requireOperand(Ctx, 1);
  if (!ScaleOr)
    return ScaleOr.takeError();
  const Tensor &X = **XOr, &Scale = **ScaleOr;
  const Tensor *Bias = Ctx.in(2);
  if (X.rank() == 0)
    return Ctx.error("input must have rank >= 1");
  auto AxisOr = normalizeAxis(Ctx, Ctx.attrs().getInt("axis", -1), X.rank());
  if (!AxisOr)
    return AxisOr.takeError();
  unsigned Axis = *AxisOr;
  double Epsilon = Ctx.attrs().getFloat("epsilon", 1e-5f);
  // Statistics type: f32 for stash_type 1 (the default), else X's type (the
  // same rule as shape inference).
  DType StatType =
      Ctx.attrs().getInt("stash_type", 1) == 1 ? DType::F32 : X.dtype();
  for (const Tensor *T : {&Scale, Bias}) {
    if (!T)
      continue;
    if (T->dtype() != X.dtype())
      return Ctx.error("scale and bias must have the input's type " +
                       dtypeName(X.dtype()) + ", got " + dtypeName(T->dtype()));
    DimVector Dims;
    if (!broadcastDims({X.dims(), T->dims()}, Dims) ||
        llvm::ArrayRef<int64_t>(Dims) != X.dims())
      return Ctx.error("scale and bias must broadcast to the input's shape");
  }
  int64_t Outer = 1, Inner = 1;
  for (unsigned I = 0; I < X.rank(); ++I)
    (I < Axis ? Outer : Inner) *= X.dims()[I];
  DimVector StatDims(X.dims().begin(), X.dims().end());
  for (unsigned I = Axis; I < X.rank(); ++I)
    StatDims[I] = 1;

  return visitDType<dtypes::Float>(Ctx, X.dtype(), [&](auto Tag) {
    using Tr = TraitsOf<decltype(Tag)>;
    using S = typename Tr::Storage;
    using C = typename Tr::Compute;
    const S *In = X.data<S>();
    std::vector<double> Norm(X.numElements());
    Tensor Mean(StatType, StatDims), InvStd(StatType, StatDims);
    for (int64_t O = 0; O < Outer; ++O) {
      const S *Row = In + O * Inner;
      double Sum = 0;
      for (int64_t I = 0; I < Inner; ++I)
        Sum += Tr::load(Row[I]);
      double M = Sum / double(Inner);
      double SqSum = 0;
      for (int64_t I = 0; I < Inner; ++I) {
        double D = double(Tr::load(Row[I])) - M;
        SqSum += D * D;
      }
      double R = 1.0 / std::sqrt(SqSum / double(Inner) + Epsilon);
      for (int64_t I = 0; I < Inner; ++I)
        Norm[O * Inner + I] = (double(Tr::load(Row[I])) - M) * R;
      Mean.setDouble(O, M);
      InvStd.setDouble(O, R);
    }
    // Y = Norm * Scale + B, Scale and B broadcast to X's shape.
    Tensor Zero(X.dtype(), {});
    const Tensor &B = Bias ? *Bias : Zero;
    Tensor Y(X.dtype(), X.dims());
    mapTernary(
        Norm.data(), X.dims(), Scale.data<S>(), Scale.dims(), B.data<S>(),
        B.dims(), Y.mutableData<S>(), X.dims(), [](double N, S Sc, S Bi) {
          return Tr::store(C(N * double(Tr::load(Sc)) + double(Tr::load(Bi))));
        });
    Ctx.Results[0] = std::move(Y);
    if (Ctx.N.result(1))
      Ctx.Results[1] = std::move(Mean);
    if (Ctx.N.result(2))
      Ctx.Results[2] = std::move(InvStd);
    return llvm::Error::success();
  });
}

//===----------------------------------------------------------------------===//
// RMSNormalization (ONNX opset 23)
//===----------------------------------------------------------------------===//

llvm::Error evalRMSNormalization(KernelContext &Ctx) {
  auto XOr = requireOperand(Ctx, 0);
  if (!XOr)
    return XOr.takeError();
  auto ScaleOr = requireOperand(Ctx, 1);
  if (!ScaleOr)
    return ScaleOr.takeError();
  const Tensor &X = **XOr, &Scale = **ScaleOr;
  if (X.rank() == 0)
    return Ctx.error("input must have rank >= 1");
  auto AxisOr = normalizeAxis(Ctx, Ctx.attrs().getInt("axis", -1), X.rank());
  if (!AxisOr)
    return AxisOr.takeError();
  unsigned Axis = *AxisOr;
  double Epsilon = Ctx.attrs().getFloat("epsilon", 1e-5f);
  if (Scale.dtype() != X.dtype())
    return Ctx.error("scale must have the input's type " +
                     dtypeName(X.dtype()) + ", got " +
                     dtypeName(Scale.dtype()));
  DimVector Dims;
  if (!broadcastDims({X.dims(), Scale.dims()}, Dims) ||
      llvm::ArrayRef<int64_t>(Dims) != X.dims())
    return Ctx.error("scale must broadcast to the input's shape");
  int64_t Outer = 1, Inner = 1;
  for (unsigned I = 0; I < X.rank(); ++I)
    (I < Axis ? Outer : Inner) *= X.dims()[I];

  return visitDType<dtypes::Float>(Ctx, X.dtype(), [&](auto Tag) {
    using Tr = TraitsOf<decltype(Tag)>;
    using S = typename Tr::Storage;
    using C = typename Tr::Compute;
    const S *In = X.data<S>();
    std::vector<double> Norm(X.numElements());
    for (int64_t O = 0; O < Outer; ++O) {
      const S *Row = In + O * Inner;
      double SqSum = 0;
      for (int64_t I = 0; I < Inner; ++I) {
        double V = Tr::load(Row[I]);
        SqSum += V * V;
      }
      double R = 1.0 / std::sqrt(SqSum / double(Inner) + Epsilon);
      for (int64_t I = 0; I < Inner; ++I)
        Norm[O * Inner + I] = double(Tr::load(Row[I])) * R;
    }
    Tensor Y(X.dtype(), X.dims());
    mapBinary(Norm.data(), X.dims(), Scale.data<S>(), Scale.dims(),
              Y.mutableData<S>(), X.dims(), [](double N, S Sc) {
                return Tr::store(C(N * double(Tr::load(Sc))));
              });
    Ctx.Results[0] = std::move(Y);
    return llvm::Error::success();
  });
}

} // namespace ref
} // namespace solder
