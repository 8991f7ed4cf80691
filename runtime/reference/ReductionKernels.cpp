//===- ReductionKernels.cpp - Reduction and normalization kernels ---------===//
//
// Reference kernels of ReduceMean/ReduceSum/ReduceMax (axes operand,
// keepdims, noop_with_empty_axes), Softmax/LogSoftmax (opset-13 semantics:
// normalize along one axis) and LayerNormalization.
//
// Reductions walk the input once in memory order and accumulate into an
// output-sized buffer (double for floats, 64-bit for integers), so any set of
// axes costs one pass. Row statistics are kept in double.
//
//===----------------------------------------------------------------------===//
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
enum class ReduceKind { Sum, Mean, Max };

/// The accumulator of a compute type: double for floats, 64-bit integers of
/// the same signedness for integers and bools.
template <typename C>
using AccType = std::conditional_t<
    std::is_floating_point_v<C>, double,
    std::conditional_t<std::is_signed_v<C>, int64_t, uint64_t>>;
} // namespace

template <ReduceKind Kind, typename A> static A reduceInit() {
  if constexpr (Kind == ReduceKind::Max)
    return std::is_floating_point_v<A> ? -std::numeric_limits<A>::infinity()
                                       : std::numeric_limits<A>::lowest();
  return A(0);
}

template <ReduceKind Kind, typename A> static A reduceStep(A Acc, A V) {
  if constexpr (Kind == ReduceKind::Max) {
    if constexpr (std::is_floating_point_v<A>)
      if (std::isnan(Acc) || std::isnan(V)) // NaN propagates, as np.max
        return std::numeric_limits<A>::quiet_NaN();
    return V > Acc ? V : Acc;
  } else if constexpr (std::is_floating_point_v<A>) {
    return Acc + V;
  } else {
    using U = std::make_unsigned_t<A>; // wraps like numpy, no UB
    return A(U(Acc) + U(V));
  }
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
    using A = AccType<C>;
    Tensor Y(X.dtype(), OutDims);
    int64_t OutCount = Y.numElements();
    std::vector<A> Acc(OutCount, reduceInit<Kind, A>());
    const S *In = X.data<S>();
    StridedLoop<2> Loop(X.dims(), {contiguousStrides(X.dims()),
                                   broadcastStrides(AccDims, X.dims())});
    Loop.forEachRow([&](const std::array<int64_t, 2> &Off,
                        const std::array<int64_t, 2> &St, int64_t Len) {
      const S *P = In + Off[0];
      A *Q = Acc.data() + Off[1];
      if (St[1] == 0) { // reducing along the row: keep it in a register
        A Local = *Q;
        for (int64_t J = 0; J < Len; ++J)
          Local = reduceStep<Kind>(Local, A(Tr::load(P[J * St[0]])));
        *Q = Local;
      } else {
        for (int64_t J = 0; J < Len; ++J)
          Q[J * St[1]] =
              reduceStep<Kind>(Q[J * St[1]], A(Tr::load(P[J * St[0]])));
      }
    });
    S *Out = Y.mutableData<S>();
    for (int64_t I = 0; I < OutCount; ++I) {
      if constexpr (Kind == ReduceKind::Mean) {
        // Integer means truncate, like numpy's mean cast back (ONNX ref);
        // an empty reduction gives NaN (0/0) for floats.
        double M = double(Acc[I]) / double(Count);
        if constexpr (std::is_floating_point_v<C>)
          Out[I] = Tr::store(C(M));
        else
          Out[I] = Tr::store(floatToInt<C>(M));
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
