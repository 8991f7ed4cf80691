//===- Tensor.h - Host tensors: weights and reference values ----*- C++ -*-===//
//
// A Tensor is a static-shaped, dense, row-major block of host memory. The
// storage is reference-counted and immutable once shared: copying a Tensor
// copies a pointer, never the data, so an initializer is held once however
// many nodes or constant-folding steps use it.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_IR_TENSOR_H
#define SOLDER_IR_TENSOR_H

#include "ir/DType.h"
#include "ir/Type.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include <cassert>
#include <memory>
#include <string>

namespace solder {

class TensorArena;

class Tensor {
public:
  Tensor() = default;
  /// Allocates zero-filled storage for the given type and shape.
  Tensor(DType Elem, llvm::ArrayRef<int64_t> Dims);
  /// Adopts an existing byte buffer (e.g. the raw_data string of an ONNX
  /// TensorProto, moved in), without copying it. Size must match.
  static Tensor fromBytes(DType Elem, llvm::ArrayRef<int64_t> Dims,
                          std::string &&Bytes);
  /// Aliases Bytes (exactly the tensor's size) without copying; Owner keeps
  /// them alive (a mapped model file). They must not change while a tensor
  /// refers to them. Bytes not aligned for the element type are copied to
  /// aligned storage on the first typed access (rawData), never before:
  /// a compile that only moves the bytes to a plan never copies them.
  static Tensor view(DType Elem, llvm::ArrayRef<int64_t> Dims,
                     const char *Bytes, std::shared_ptr<const void> Owner);
  /// Copies Count*dtypeSize bytes from Src.
  static Tensor copyOf(DType Elem, llvm::ArrayRef<int64_t> Dims,
                       const void *Src);
  /// Storage the caller fills completely before anyone reads it (no zero
  /// fill: a 110M-element conversion then touches its pages once, on the
  /// threads that write them).
  static Tensor uninitialized(DType Elem, llvm::ArrayRef<int64_t> Dims);
  /// A rank-0 tensor / 1-D tensor from values (converted to Elem).
  static Tensor scalar(DType Elem, double V);
  static Tensor fromInt64s(llvm::ArrayRef<int64_t> Values);
  static Tensor fromFloats(llvm::ArrayRef<float> Values,
                           llvm::ArrayRef<int64_t> Dims);

  bool isNull() const { return !Storage && !Unaligned; }
  DType dtype() const { return Elem; }
  llvm::ArrayRef<int64_t> dims() const { return Dims; }
  unsigned rank() const { return Dims.size(); }
  int64_t numElements() const;
  size_t byteSize() const { return size_t(numElements()) * dtypeSize(Elem); }
  TensorType type() const { return TensorType(Elem, Dims); }

  /// The bytes, aligned for the element type.
  const void *rawData() const {
    return Unaligned ? alignedCopy() : Storage.get();
  }
  /// Mutable access; only valid while this tensor is the sole owner (fresh
  /// results of a kernel). Shared weights are never written.
  void *mutableRawData() {
    assert(!Unaligned && "views are immutable");
    return Storage.get();
  }
  /// The bytes where they live, any alignment, without a copy (for code
  /// that only moves them: plan weights).
  llvm::StringRef bytes() const;
  /// What keeps bytes() alive, for holders outliving this Tensor.
  std::shared_ptr<const void> keepAlive() const;
  template <typename T> const T *data() const {
    return static_cast<const T *>(rawData());
  }
  template <typename T> T *mutableData() {
    return static_cast<T *>(mutableRawData());
  }

  /// Same storage, new shape (element count must match).
  Tensor reshaped(llvm::ArrayRef<int64_t> NewDims) const;
  /// A new tensor with the dims permuted as ONNX Transpose does: result
  /// dim I is dim Perm[I] (Perm must be a permutation of the rank); its
  /// storage from Arena when given.
  Tensor transposed(llvm::ArrayRef<int64_t> Perm,
                    TensorArena *Arena = nullptr) const;

  /// Element I converted to double / int64 (any dtype). For shape tensors,
  /// attributes and tests; kernels use typed pointers.
  double getDouble(int64_t I) const;
  int64_t getInt64(int64_t I) const;
  void setDouble(int64_t I, double V);
  /// All elements as int64 (for shape-like tensors: axes, pads, shapes).
  llvm::SmallVector<int64_t, 8> toInt64Vector() const;

  /// Bitwise equality of type, shape and bytes.
  bool bitwiseEqual(const Tensor &O) const;
  bool operator==(const Tensor &O) const { return bitwiseEqual(O); }

private:
  friend class TensorArena;
  struct UnalignedView;
  const void *alignedCopy() const;

  DType Elem = DType::Undefined;
  llvm::SmallVector<int64_t, 4> Dims;
  std::shared_ptr<char> Storage; // aliasing pointer into the owner
  /// Set instead of Storage for a misaligned view (see view()).
  std::shared_ptr<UnalignedView> Unaligned;
};

/// Storage for many new tensors (conv-layout's transposed weights) carved
/// from a few large blocks in 2 MiB pages: filling them on one thread
/// faults once per 2 MiB rather than per 4 KiB page (ResNet-50's NHWC
/// weights: 24 -> 10 ms on the development machine). Not for tensors that
/// several threads fill at once: they wait behind one thread zeroing each
/// 2 MiB page (fp16 conversion measured slower). Blocks grow from 8 to 256
/// MiB; a block lives while any tensor in it does. One per pass run: not
/// thread-safe.
class TensorArena {
public:
  /// Storage the caller fills completely before anyone reads it.
  Tensor uninitialized(DType Elem, llvm::ArrayRef<int64_t> Dims);

private:
  std::shared_ptr<char> Block;
  size_t Used = 0, Size = 0, Next = size_t(8) << 20;
};

} // namespace solder

#endif
