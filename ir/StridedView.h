//===- StridedView.h - Tensors as strided views of a buffer -----*- C++ -*-===//
//
// Layout ops (Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Slice) move
// no data when their result is read through strides: a Transpose of a
// [B, S, heads, d] tensor is the same buffer read with permuted strides.
// A StridedView is that reading: element (i0, i1, ...) of the view lives
// at Offset + sum(ik * Strides[k]) elements into the buffer.
//
// The fusion passes use this to decide what a library call can read or
// write directly (a batched matmul taking Q, K and V straight out of the
// packed QKV projection, and writing its result in the layout the output
// projection reads), and the plan builder to set up that call. Both use
// the same functions, so they agree on what is expressible.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_IR_STRIDEDVIEW_H
#define SOLDER_IR_STRIDEDVIEW_H

#include "ir/Graph.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>

namespace solder {

struct StridedView {
  int64_t Offset = 0;
  llvm::SmallVector<int64_t, 6> Dims, Strides;

  /// The row-major (C-contiguous) view of a whole buffer.
  static StridedView contiguous(llvm::ArrayRef<int64_t> Dims);
  bool operator==(const StridedView &O) const {
    return Offset == O.Offset && Dims == O.Dims && Strides == O.Strides;
  }
};

/// The same elements seen with NewDims (same count), or nullopt when the
/// dims it merges are not laid out contiguously relative to each other.
std::optional<StridedView> reshapeView(const StridedView &V,
                                       llvm::ArrayRef<int64_t> NewDims);

/// Whether N's result is a strided view of its first operand: a layout op
/// with static types (and constant starts/ends/axes/steps for a Slice with
/// positive steps).
bool isStridedViewOp(const Node &N);

/// N's result as a view, given its first operand's (a read through N).
std::optional<StridedView> viewOfResult(const Node &N,
                                        const StridedView &Operand);

/// N's first operand as a view, given its result's (a write through N:
/// the operand is produced in the layout that makes N a no-op). Not for
/// Slice, whose operand has elements the result lacks.
std::optional<StridedView> viewOfOperand(const Node &N,
                                         const StridedView &Result);

/// The view a value read through Chain (layout ops, outermost first: the
/// first reads a contiguous buffer of SourceDims) has of that buffer.
template <typename NodeRange>
std::optional<StridedView> viewReadThrough(llvm::ArrayRef<int64_t> SourceDims,
                                           const NodeRange &Chain) {
  std::optional<StridedView> V = StridedView::contiguous(SourceDims);
  for (const Node *L : Chain)
    if (V)
      V = viewOfResult(*L, *V);
  return V;
}

/// The view of a value written through Chain (outermost first: the last
/// writes a contiguous buffer of ResultDims).
template <typename NodeRange>
std::optional<StridedView>
viewWrittenThrough(llvm::ArrayRef<int64_t> ResultDims, const NodeRange &Chain) {
  std::optional<StridedView> V = StridedView::contiguous(ResultDims);
  for (const Node *L : llvm::reverse(Chain))
    if (V)
      V = viewOfOperand(*L, *V);
  return V;
}

/// How cuBLASLt computes a row-major matmul D[b, m, n] = sum_k A[b, m, k]
/// B[b, k, n] over strided views: as column-major D^T = B^T A^T, so
/// cuBLASLt's A is our B and its B is our A. M, N, K are cuBLASLt's (N is
/// our rows). Batches with one stride each run as a strided batch; others
/// (e.g. [B, heads] over a [B, S, heads, d] buffer) need pointer arrays:
/// BatchDims lists them (outer first) with each operand's stride per dim.
struct GemmGeometry {
  bool TransA = false, TransB = false;
  int64_t M = 0, N = 0, K = 0, Lda = 0, Ldb = 0, Ldd = 0;
  /// Element offsets of the first matrix of each operand.
  int64_t OffsetA = 0, OffsetB = 0, OffsetD = 0;
  /// One batch dim at most: a strided batch.
  int64_t Batch = 1, StrideA = 0, StrideB = 0, StrideD = 0;
  /// Several: pointer arrays (Batch is their product).
  llvm::SmallVector<int64_t, 4> BatchDims, BatchStrideA, BatchStrideB,
      BatchStrideD;
  bool pointerArrays() const { return !BatchDims.empty(); }
};

/// The geometry of D = A x B (ONNX MatMul semantics, rank >= 2 views with
/// broadcast batch dims), or nullopt when cuBLASLt cannot take a view (no
/// unit stride in a matrix, overlapping rows, a batch dim of D that A or B
/// has with another size).
std::optional<GemmGeometry> matmulGeometry(const StridedView &A,
                                           const StridedView &B,
                                           const StridedView &D);

} // namespace solder

#endif
