//===- KernelUtils.h - Shared helpers of the reference kernels --*- C++ -*-===//
//
// Internal to runtime/reference. Three groups of helpers:
//  - DTypeTraits / visitDType: map a runtime DType to its storage type (what
//    the tensor holds) and compute type (what arithmetic runs in: float for
//    f16/bf16, so each element is rounded once, as numpy does), and call a
//    generic lambda once per supported dtype.
//  - Numpy broadcasting of shapes and a strided loop that coalesces dims, so
//    a broadcast elementwise op costs one short index update per row, not per
//    element.
//  - mapUnary/mapBinary/mapTernary: typed elementwise loops with fast paths
//    for equal shapes and scalar operands.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_RUNTIME_REFERENCE_KERNELUTILS_H
#define SOLDER_RUNTIME_REFERENCE_KERNELUTILS_H

#include "ir/DType.h"
#include "ir/Tensor.h"
#include "runtime/reference/Kernels.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"
#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace solder {
namespace ref {

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

/// Storage: the C++ type of one element in a Tensor's buffer. Compute: the
/// type arithmetic runs in. load/store convert between them.
template <DType D> struct DTypeTraits;

#define SOLDER_PLAIN_DTYPE(D, T)                                               \
  template <> struct DTypeTraits<DType::D> {                                   \
    using Storage = T;                                                         \
    using Compute = T;                                                         \
    static Compute load(Storage V) { return V; }                               \
    static Storage store(Compute V) { return V; }                              \
  };
SOLDER_PLAIN_DTYPE(F32, float)
SOLDER_PLAIN_DTYPE(F64, double)
SOLDER_PLAIN_DTYPE(I8, int8_t)
SOLDER_PLAIN_DTYPE(U8, uint8_t)
SOLDER_PLAIN_DTYPE(I16, int16_t)
SOLDER_PLAIN_DTYPE(U16, uint16_t)
SOLDER_PLAIN_DTYPE(I32, int32_t)
SOLDER_PLAIN_DTYPE(U32, uint32_t)
SOLDER_PLAIN_DTYPE(I64, int64_t)
SOLDER_PLAIN_DTYPE(U64, uint64_t)
#undef SOLDER_PLAIN_DTYPE

template <> struct DTypeTraits<DType::F16> {
  using Storage = uint16_t;
  using Compute = float;
  static Compute load(Storage V) { return halfToFloat(V); }
  static Storage store(Compute V) { return floatToHalf(V); }
};
template <> struct DTypeTraits<DType::BF16> {
  using Storage = uint16_t;
  using Compute = float;
  static Compute load(Storage V) { return bf16ToFloat(V); }
  static Storage store(Compute V) { return floatToBF16(V); }
};
/// Bools are one byte; any non-zero byte reads as true.
template <> struct DTypeTraits<DType::Bool> {
  using Storage = uint8_t;
  using Compute = bool;
  static Compute load(Storage V) { return V != 0; }
  static Storage store(Compute V) { return V ? 1 : 0; }
};

/// The argument visitDType passes to its callback: `decltype(Tag)::value` is
/// the DType, usable as a template argument.
template <DType D> using DTypeTag = std::integral_constant<DType, D>;

/// Traits of the dtype a DTypeTag names: `TraitsOf<decltype(Tag)>`.
template <typename Tag> using TraitsOf = DTypeTraits<Tag::value>;

/// Sets of dtypes, as bit masks, for visitDType.
namespace dtypes {
constexpr uint32_t bit(DType D) { return uint32_t(1) << unsigned(D); }
constexpr uint32_t Float =
    bit(DType::F32) | bit(DType::F16) | bit(DType::BF16) | bit(DType::F64);
constexpr uint32_t SignedInt =
    bit(DType::I8) | bit(DType::I16) | bit(DType::I32) | bit(DType::I64);
constexpr uint32_t UnsignedInt =
    bit(DType::U8) | bit(DType::U16) | bit(DType::U32) | bit(DType::U64);
constexpr uint32_t Int = SignedInt | UnsignedInt;
constexpr uint32_t Numeric = Float | Int;
constexpr uint32_t Bool = bit(DType::Bool);
constexpr uint32_t All = Numeric | Bool;
} // namespace dtypes

/// Calls F(DTypeTag<T>()) when T is in Set (only those instantiations are
/// compiled); otherwise an error naming the node and the dtype.
template <uint32_t Set, typename Fn>
llvm::Error visitDType(const KernelContext &Ctx, DType T, Fn &&F) {
  switch (T) {
#define SOLDER_VISIT_CASE(D)                                                   \
  case DType::D:                                                               \
    if constexpr ((Set & dtypes::bit(DType::D)) != 0)                          \
      return F(DTypeTag<DType::D>());                                          \
    break;
    SOLDER_VISIT_CASE(F32)
    SOLDER_VISIT_CASE(F16)
    SOLDER_VISIT_CASE(BF16)
    SOLDER_VISIT_CASE(F64)
    SOLDER_VISIT_CASE(I8)
    SOLDER_VISIT_CASE(U8)
    SOLDER_VISIT_CASE(I16)
    SOLDER_VISIT_CASE(U16)
    SOLDER_VISIT_CASE(I32)
    SOLDER_VISIT_CASE(U32)
    SOLDER_VISIT_CASE(I64)
    SOLDER_VISIT_CASE(U64)
    SOLDER_VISIT_CASE(Bool)
#undef SOLDER_VISIT_CASE
  case DType::Undefined:
    break;
  }
  return Ctx.error("element type " + dtypeName(T) +
                   " is not supported by this op");
}

/// Operand I, or an error when the required operand is missing.
inline llvm::Expected<const Tensor *> requireOperand(const KernelContext &Ctx,
                                                     unsigned I) {
  if (const Tensor *T = Ctx.in(I))
    return T;
  return Ctx.error("required operand " + llvm::Twine(I) + " is missing");
}

/// Normalizes a possibly negative axis into [0, Rank); error when outside
/// [-Rank, Rank).
inline llvm::Expected<unsigned> normalizeAxis(const KernelContext &Ctx,
                                              int64_t Axis, unsigned Rank) {
  if (Axis < -int64_t(Rank) || Axis >= int64_t(Rank))
    return Ctx.error("axis " + llvm::Twine(Axis) +
                     " is out of range for rank " + llvm::Twine(Rank));
  return unsigned(Axis < 0 ? Axis + Rank : Axis);
}

/// Float to integer as numpy's astype does it, without undefined behaviour:
/// truncates toward zero; NaN gives 0; values beyond the int64 (signed) or
/// uint64 (unsigned) range saturate; the rest wrap to I (-1.0 -> u8 255).
template <typename I> I floatToInt(double D) {
  if (std::isnan(D))
    return I(0);
  D = std::trunc(D);
  constexpr double Two63 = 9223372036854775808.0;
  if constexpr (std::is_signed_v<I>) {
    if (D < -Two63)
      return std::numeric_limits<I>::min();
    if (D >= Two63)
      return std::numeric_limits<I>::max();
    return I(int64_t(D));
  } else {
    if (D < 0)
      return D >= -Two63 ? I(int64_t(D)) : I(0);
    if (D >= 2 * Two63)
      return std::numeric_limits<I>::max();
    return I(uint64_t(D));
  }
}

//===----------------------------------------------------------------------===//
// Broadcasting
//===----------------------------------------------------------------------===//

using DimVector = llvm::SmallVector<int64_t, 6>;

/// Numpy multidirectional broadcast of all Shapes into Out; false when two
/// dims differ and neither is 1.
bool broadcastDims(llvm::ArrayRef<llvm::ArrayRef<int64_t>> Shapes,
                   DimVector &Out);

/// The broadcast shape of the given (non-null) operands, or an error naming
/// the node and the shapes.
llvm::Expected<DimVector>
broadcastOperandDims(const KernelContext &Ctx,
                     llvm::ArrayRef<const Tensor *> Operands);

/// Element strides of a contiguous tensor of shape In read as shape Out
/// (In broadcast to Out, aligned at the last dim): 0 along broadcast dims.
DimVector broadcastStrides(llvm::ArrayRef<int64_t> In,
                           llvm::ArrayRef<int64_t> Out);

/// Row-major contiguous element strides of Dims.
DimVector contiguousStrides(llvm::ArrayRef<int64_t> Dims);

/// A loop nest over Dims walking N operands, each with its own element
/// strides. The constructor drops size-1 dims and merges adjacent dims that
/// every operand walks contiguously (or not at all), so e.g. adding a
/// [1,C,1,1] bias to [N,C,H,W] becomes [N,C,H*W] with an inner row of H*W.
template <size_t N> class StridedLoop {
public:
  StridedLoop(llvm::ArrayRef<int64_t> LoopDims,
              const std::array<DimVector, N> &OperandStrides) {
    Empty = false;
    for (int64_t D : LoopDims)
      Empty |= D == 0;
    // Walk from the innermost dim outwards, merging when possible; the
    // result is built reversed.
    for (int I = int(LoopDims.size()) - 1; I >= 0; --I) {
      int64_t D = LoopDims[I];
      if (D == 1)
        continue;
      bool Merge = !Dims.empty();
      for (size_t K = 0; K < N && Merge; ++K)
        Merge = OperandStrides[K][I] == Strides[K].back() * Dims.back();
      if (Merge) {
        Dims.back() *= D;
        continue;
      }
      Dims.push_back(D);
      for (size_t K = 0; K < N; ++K)
        Strides[K].push_back(OperandStrides[K][I]);
    }
    if (Dims.empty()) {
      Dims.push_back(1);
      for (size_t K = 0; K < N; ++K)
        Strides[K].push_back(0);
    }
    std::reverse(Dims.begin(), Dims.end());
    for (size_t K = 0; K < N; ++K)
      std::reverse(Strides[K].begin(), Strides[K].end());
  }

  /// Calls Row(Offsets, InnerStrides, Len) once per innermost row: operand K
  /// visits elements Offsets[K] + J * InnerStrides[K] for J in [0, Len).
  template <typename RowFn> void forEachRow(RowFn &&Row) const {
    if (Empty)
      return;
    unsigned Rank = Dims.size();
    int64_t Len = Dims.back();
    std::array<int64_t, N> Inner, Off{};
    for (size_t K = 0; K < N; ++K)
      Inner[K] = Strides[K].back();
    DimVector Counter(Rank, 0);
    while (true) {
      Row(Off, Inner, Len);
      // Odometer increment over the outer dims.
      int D = int(Rank) - 2;
      for (; D >= 0; --D) {
        if (++Counter[D] < Dims[D]) {
          for (size_t K = 0; K < N; ++K)
            Off[K] += Strides[K][D];
          break;
        }
        Counter[D] = 0;
        for (size_t K = 0; K < N; ++K)
          Off[K] -= Strides[K][D] * (Dims[D] - 1);
      }
      if (D < 0)
        return;
    }
  }

private:
  DimVector Dims;
  std::array<DimVector, N> Strides;
  bool Empty;
};

//===----------------------------------------------------------------------===//
// Typed elementwise loops (storage-level functors)
//===----------------------------------------------------------------------===//

/// Out[i] = F(A[i]) for i in [0, Count).
template <typename OutS, typename AS, typename Fn>
void mapUnary(const AS *A, OutS *Out, int64_t Count, Fn &&F) {
  for (int64_t I = 0; I < Count; ++I)
    Out[I] = F(A[I]);
}

/// Out = F(A, B) with A and B broadcast to OutDims (Out is contiguous and
/// already sized to OutDims).
template <typename OutS, typename AS, typename BS, typename Fn>
void mapBinary(const AS *A, llvm::ArrayRef<int64_t> ADims, const BS *B,
               llvm::ArrayRef<int64_t> BDims, OutS *Out,
               llvm::ArrayRef<int64_t> OutDims, Fn &&F) {
  int64_t Count = 1;
  for (int64_t D : OutDims)
    Count *= D;
  if (Count == 0)
    return;
  bool AFull = ADims == OutDims, BFull = BDims == OutDims;
  int64_t ACount = 1, BCount = 1;
  for (int64_t D : ADims)
    ACount *= D;
  for (int64_t D : BDims)
    BCount *= D;
  if (AFull && BFull) {
    for (int64_t I = 0; I < Count; ++I)
      Out[I] = F(A[I], B[I]);
    return;
  }
  if (AFull && BCount == 1) {
    const BS S = B[0];
    for (int64_t I = 0; I < Count; ++I)
      Out[I] = F(A[I], S);
    return;
  }
  if (BFull && ACount == 1) {
    const AS S = A[0];
    for (int64_t I = 0; I < Count; ++I)
      Out[I] = F(S, B[I]);
    return;
  }
  StridedLoop<3> Loop(OutDims, {contiguousStrides(OutDims),
                                broadcastStrides(ADims, OutDims),
                                broadcastStrides(BDims, OutDims)});
  Loop.forEachRow([&](const std::array<int64_t, 3> &Off,
                      const std::array<int64_t, 3> &St, int64_t Len) {
    OutS *O = Out + Off[0];
    const AS *PA = A + Off[1];
    const BS *PB = B + Off[2];
    assert(St[0] == 1 && "contiguous output has unit inner stride");
    if (St[1] == 1 && St[2] == 1) {
      for (int64_t J = 0; J < Len; ++J)
        O[J] = F(PA[J], PB[J]);
    } else if (St[1] == 1 && St[2] == 0) {
      const BS S = *PB;
      for (int64_t J = 0; J < Len; ++J)
        O[J] = F(PA[J], S);
    } else if (St[1] == 0 && St[2] == 1) {
      const AS S = *PA;
      for (int64_t J = 0; J < Len; ++J)
        O[J] = F(S, PB[J]);
    } else {
      for (int64_t J = 0; J < Len; ++J)
        O[J] = F(PA[J * St[1]], PB[J * St[2]]);
    }
  });
}

/// Out = F(A, B, C) with all three broadcast to OutDims.
template <typename OutS, typename AS, typename BS, typename CS, typename Fn>
void mapTernary(const AS *A, llvm::ArrayRef<int64_t> ADims, const BS *B,
                llvm::ArrayRef<int64_t> BDims, const CS *C,
                llvm::ArrayRef<int64_t> CDims, OutS *Out,
                llvm::ArrayRef<int64_t> OutDims, Fn &&F) {
  if (ADims == OutDims && BDims == OutDims && CDims == OutDims) {
    int64_t Count = 1;
    for (int64_t D : OutDims)
      Count *= D;
    for (int64_t I = 0; I < Count; ++I)
      Out[I] = F(A[I], B[I], C[I]);
    return;
  }
  StridedLoop<4> Loop(OutDims, {contiguousStrides(OutDims),
                                broadcastStrides(ADims, OutDims),
                                broadcastStrides(BDims, OutDims),
                                broadcastStrides(CDims, OutDims)});
  Loop.forEachRow([&](const std::array<int64_t, 4> &Off,
                      const std::array<int64_t, 4> &St, int64_t Len) {
    OutS *O = Out + Off[0];
    const AS *PA = A + Off[1];
    const BS *PB = B + Off[2];
    const CS *PC = C + Off[3];
    for (int64_t J = 0; J < Len; ++J)
      O[J * St[0]] = F(PA[J * St[1]], PB[J * St[2]], PC[J * St[3]]);
  });
}

} // namespace ref
} // namespace solder

#endif
