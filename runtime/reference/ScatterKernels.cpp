//===- ScatterKernels.cpp - ScatterElements and ScatterND -----------------===//
//
// Both copy data and then visit the updates in order, writing each one at
// its target (reduction none: a later duplicate index wins, as in the ONNX
// reference) or combining it with what is there (add, mul, max, min, in
// the compute type). Negative indices count from the end of their dim;
// indices outside [-dim, dim) are an error naming the node.
//
//===----------------------------------------------------------------------===//
#include "runtime/reference/KernelUtils.h"
#include <algorithm>

namespace solder {
namespace ref {

namespace {
enum class ScatterReduce { None, Add, Mul, Max, Min };
} // namespace

static llvm::Expected<ScatterReduce> scatterReduce(KernelContext &Ctx) {
  std::string R = Ctx.attrs().getString("reduction", "none");
  if (R == "none")
    return ScatterReduce::None;
  if (R == "add")
    return ScatterReduce::Add;
  if (R == "mul")
    return ScatterReduce::Mul;
  if (R == "max")
    return ScatterReduce::Max;
  if (R == "min")
    return ScatterReduce::Min;
  return Ctx.error("reduction '" + R + "' is not none, add, mul, max or min");
}

template <typename C> static C combine(ScatterReduce R, C Old, C New) {
  if constexpr (std::is_same_v<C, bool>) {
    return New; // bool takes no reduction (refused before)
  } else {
    switch (R) {
    case ScatterReduce::None:
      return New;
    case ScatterReduce::Add:
      return Old + New;
    case ScatterReduce::Mul:
      return Old * New;
    case ScatterReduce::Max:
      return std::max(Old, New);
    case ScatterReduce::Min:
      return std::min(Old, New);
    }
    return New;
  }
}

/// Index V wrapped into [0, Dim), or an error.
static llvm::Expected<int64_t> wrapIndex(KernelContext &Ctx, int64_t V,
                                         int64_t Dim) {
  if (V < -Dim || V >= Dim)
    return Ctx.error("index " + llvm::Twine(V) + " is out of range for a dim " +
                     "of " + llvm::Twine(Dim));
  return V < 0 ? V + Dim : V;
}

/// Copies data and applies every update in order at Target(update index),
/// the data offset it goes to: the two ops differ only in that.
template <typename TargetFn>
static llvm::Error scatterKernel(KernelContext &Ctx, TargetFn Target) {
  const Tensor *D = Ctx.in(0), *I = Ctx.in(1), *U = Ctx.in(2);
  if (!D || !I || !U)
    return Ctx.error("expects data, indices and updates");
  auto Red = scatterReduce(Ctx);
  if (!Red)
    return Red.takeError();
  if (*Red != ScatterReduce::None && D->dtype() == DType::Bool)
    return Ctx.error("a reduction needs a numeric type, got bool");
  return visitDType<dtypes::All>(Ctx, D->dtype(), [&](auto Tag) -> llvm::Error {
    using Tr = TraitsOf<decltype(Tag)>;
    using S = typename Tr::Storage;
    // A copy: D's storage may be shared (a weight, another result).
    Tensor Y = Tensor::copyOf(D->dtype(), D->dims(), D->rawData());
    S *Out = Y.mutableData<S>();
    const S *Upd = U->data<S>();
    for (int64_t K = 0, E = U->numElements(); K < E; ++K) {
      auto Off = Target(K);
      if (!Off)
        return Off.takeError();
      if (*Red == ScatterReduce::None)
        Out[*Off] = Upd[K];
      else
        Out[*Off] =
            Tr::store(combine(*Red, Tr::load(Out[*Off]), Tr::load(Upd[K])));
    }
    Ctx.Results[0] = std::move(Y);
    return llvm::Error::success();
  });
}

llvm::Error evalScatterElements(KernelContext &Ctx) {
  const Tensor *D = Ctx.in(0), *I = Ctx.in(1), *U = Ctx.in(2);
  if (!D || !I || !U)
    return Ctx.error("expects data, indices and updates");
  if (I->dims() != U->dims() || I->rank() != D->rank())
    return Ctx.error("indices and updates must have one shape of data's rank");
  auto AxisOr = normalizeAxis(Ctx, Ctx.attrs().getInt("axis", 0), D->rank());
  if (!AxisOr)
    return AxisOr.takeError();
  unsigned Axis = *AxisOr;
  DimVector DStrides = contiguousStrides(D->dims());
  return scatterKernel(Ctx, [&](int64_t K) -> llvm::Expected<int64_t> {
    int64_t Rest = K, Off = 0;
    for (int64_t Dm = I->rank() - 1; Dm >= 0; --Dm) {
      int64_t C = Rest % I->dims()[Dm];
      Rest /= I->dims()[Dm];
      if (Dm == int64_t(Axis)) {
        auto W = wrapIndex(Ctx, I->getInt64(K), D->dims()[Dm]);
        if (!W)
          return W.takeError();
        C = *W;
      } else if (C >= D->dims()[Dm]) {
        return Ctx.error("updates are larger than data along dim " +
                         llvm::Twine(Dm));
      }
      Off += C * DStrides[Dm];
    }
    return Off;
  });
}

llvm::Error evalScatterND(KernelContext &Ctx) {
  const Tensor *D = Ctx.in(0), *I = Ctx.in(1), *U = Ctx.in(2);
  if (!D || !I || !U)
    return Ctx.error("expects data, indices and updates");
  if (I->rank() == 0)
    return Ctx.error("indices must have rank >= 1");
  int64_t K = I->dims().back();
  if (K < 1 || K > int64_t(D->rank()))
    return Ctx.error("indices' last dim must be in [1, rank of data]");
  int64_t Slice = 1;
  for (unsigned Dm = K; Dm < D->rank(); ++Dm)
    Slice *= D->dims()[Dm];
  int64_t Slices = I->numElements() / K;
  if (U->numElements() != Slices * Slice)
    return Ctx.error("updates must hold one data slice per index tuple");
  DimVector DStrides = contiguousStrides(D->dims());
  return scatterKernel(Ctx, [&](int64_t E) -> llvm::Expected<int64_t> {
    int64_t Tuple = E / Slice, Off = E % Slice;
    for (int64_t Dm = 0; Dm < K; ++Dm) {
      auto W = wrapIndex(Ctx, I->getInt64(Tuple * K + Dm), D->dims()[Dm]);
      if (!W)
        return W.takeError();
      Off += *W * DStrides[Dm];
    }
    return Off;
  });
}

} // namespace ref
} // namespace solder
