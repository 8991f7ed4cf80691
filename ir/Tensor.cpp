//===- Tensor.cpp - Host tensors ------------------------------------------===//
#include "ir/Tensor.h"
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <sys/mman.h>

namespace solder {

/// Bytes rounded up to whole 64-byte lines (vector loops read whole lines),
/// at least one.
static size_t lineBytes(size_t Bytes) {
  return (std::max<size_t>(Bytes, 1) + 63) / 64 * 64;
}

static std::shared_ptr<char> allocateStorage(size_t Bytes, bool Zeroed = true) {
  // 64-byte alignment so BLAS and vector loops get aligned rows; never a
  // zero-sized allocation, so rawData() of an empty tensor is non-null.
  size_t Align = 64;
  // Weights of megabytes (converted, transposed, packed) are written once,
  // right after: in 2 MiB pages their first touches fault 512 times less
  // (where transparent huge pages are on "madvise", as on Debian).
  constexpr size_t Huge = size_t(2) << 20;
  if (Bytes >= 2 * Huge)
    Align = Huge;
  size_t Rounded = (std::max<size_t>(Bytes, 1) + Align - 1) / Align * Align;
  char *P = static_cast<char *>(std::aligned_alloc(Align, Rounded));
  if (!P)
    throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (Align == Huge)
    ::madvise(P, Rounded, MADV_HUGEPAGE); // a hint: failure changes nothing
#endif
  // Defined through the last 64-byte line; a huge allocation's tail past
  // it is never read, so never touched.
  size_t Lines = lineBytes(Bytes);
  if (Zeroed)
    std::memset(P, 0, Lines);
  else if (Lines > Bytes) // the padding, so no byte is ever undefined
    std::memset(P + Bytes, 0, Lines - Bytes);
  return std::shared_ptr<char>(P, [](char *Q) { std::free(Q); });
}

static int64_t product(llvm::ArrayRef<int64_t> Dims) {
  int64_t N = 1;
  for (int64_t D : Dims)
    N *= D;
  return N;
}

Tensor::Tensor(DType Elem, llvm::ArrayRef<int64_t> Dims)
    : Elem(Elem), Dims(Dims.begin(), Dims.end()) {
  Storage = allocateStorage(size_t(product(Dims)) * dtypeSize(Elem));
}

Tensor Tensor::fromBytes(DType Elem, llvm::ArrayRef<int64_t> Dims,
                         std::string &&Bytes) {
  assert(Bytes.size() == size_t(product(Dims)) * dtypeSize(Elem) &&
         "byte size does not match the shape");
  Tensor T;
  T.Elem = Elem;
  T.Dims.assign(Dims.begin(), Dims.end());
  if (Bytes.empty()) {
    T.Storage = allocateStorage(0);
    return T;
  }
  auto Owner = std::make_shared<std::string>(std::move(Bytes));
  T.Storage = std::shared_ptr<char>(Owner, Owner->data());
  return T;
}

struct Tensor::UnalignedView {
  const char *Bytes;
  size_t Size;
  std::shared_ptr<const void> Owner;
  std::once_flag Once;
  std::shared_ptr<char> Copy;
};

const void *Tensor::alignedCopy() const {
  UnalignedView &V = *Unaligned;
  std::call_once(V.Once, [&V] {
    V.Copy = allocateStorage(V.Size, /*Zeroed=*/false);
    std::memcpy(V.Copy.get(), V.Bytes, V.Size);
  });
  return V.Copy.get();
}

llvm::StringRef Tensor::bytes() const {
  if (Unaligned)
    return llvm::StringRef(Unaligned->Bytes, Unaligned->Size);
  return llvm::StringRef(Storage.get(), byteSize());
}

std::shared_ptr<const void> Tensor::keepAlive() const {
  if (Unaligned)
    return Unaligned;
  return Storage;
}

Tensor Tensor::view(DType Elem, llvm::ArrayRef<int64_t> Dims, const char *Bytes,
                    std::shared_ptr<const void> Owner) {
  Tensor T;
  T.Elem = Elem;
  T.Dims.assign(Dims.begin(), Dims.end());
  if (T.byteSize() == 0) {
    T.Storage = allocateStorage(0);
    return T;
  }
  if (reinterpret_cast<uintptr_t>(Bytes) % dtypeSize(Elem) != 0) {
    T.Unaligned = std::make_shared<UnalignedView>();
    T.Unaligned->Bytes = Bytes;
    T.Unaligned->Size = T.byteSize();
    T.Unaligned->Owner = std::move(Owner);
    return T;
  }
  // Storage is non-const for fresh kernel results; viewed bytes are never
  // written (mutableRawData is only for sole owners of fresh tensors).
  T.Storage =
      std::shared_ptr<char>(std::move(Owner), const_cast<char *>(Bytes));
  return T;
}

Tensor Tensor::uninitialized(DType Elem, llvm::ArrayRef<int64_t> Dims) {
  Tensor T;
  T.Elem = Elem;
  T.Dims.assign(Dims.begin(), Dims.end());
  T.Storage = allocateStorage(T.byteSize(), /*Zeroed=*/false);
  return T;
}

Tensor TensorArena::uninitialized(DType Elem, llvm::ArrayRef<int64_t> Dims) {
  Tensor T;
  T.Elem = Elem;
  T.Dims.assign(Dims.begin(), Dims.end());
  size_t Bytes = T.byteSize();
  // Whole 64-byte lines per tensor, as allocateStorage gives.
  size_t Lines = lineBytes(Bytes);
  if (Lines > Size - Used) {
    constexpr size_t Largest = size_t(256) << 20;
    size_t Want = std::max(Lines, Next);
    Next = std::min(Largest, Next * 2);
    Block = allocateStorage(Want, /*Zeroed=*/false);
    Size = Want;
    Used = 0;
  }
  char *P = Block.get() + Used;
  std::memset(P + Bytes, 0, Lines - Bytes); // no byte is ever undefined
  T.Storage = std::shared_ptr<char>(Block, P);
  Used += Lines;
  return T;
}

Tensor Tensor::copyOf(DType Elem, llvm::ArrayRef<int64_t> Dims,
                      const void *Src) {
  Tensor T;
  T.Elem = Elem;
  T.Dims.assign(Dims.begin(), Dims.end());
  size_t Bytes = T.byteSize();
  T.Storage = allocateStorage(Bytes, /*Zeroed=*/false);
  if (Bytes)
    std::memcpy(T.Storage.get(), Src, Bytes);
  return T;
}

Tensor Tensor::scalar(DType Elem, double V) {
  Tensor T(Elem, {});
  T.setDouble(0, V);
  return T;
}

Tensor Tensor::fromInt64s(llvm::ArrayRef<int64_t> Values) {
  Tensor T(DType::I64, {int64_t(Values.size())});
  if (!Values.empty())
    std::memcpy(T.mutableRawData(), Values.data(), Values.size() * 8);
  return T;
}

Tensor Tensor::fromFloats(llvm::ArrayRef<float> Values,
                          llvm::ArrayRef<int64_t> Dims) {
  assert(int64_t(Values.size()) == product(Dims) && "size mismatch");
  return copyOf(DType::F32, Dims, Values.data());
}

int64_t Tensor::numElements() const { return product(Dims); }

Tensor Tensor::reshaped(llvm::ArrayRef<int64_t> NewDims) const {
  assert(product(NewDims) == numElements() && "reshape changes the size");
  Tensor T = *this;
  T.Dims.assign(NewDims.begin(), NewDims.end());
  return T;
}

/// Writes Dst in order: result element (i_0, ..., i_{R-1}) is the source
/// element at sum_d i_d Src[d] (in elements of type T, the element's
/// bytes). The last dim is a tight strided loop; an odometer walks the
/// others (ResNet-50's NHWC weights: one call per 3x3 filter row instead
/// of a memcpy call per element).
template <typename T>
static void permuteInto(const char *InBytes, char *DstBytes,
                        llvm::ArrayRef<int64_t> OutDims,
                        llvm::ArrayRef<int64_t> Src) {
  const T *In = reinterpret_cast<const T *>(InBytes);
  T *Dst = reinterpret_cast<T *>(DstBytes);
  unsigned R = OutDims.size();
  if (R == 0) {
    Dst[0] = In[0];
    return;
  }
  int64_t Inner = OutDims[R - 1], Step = Src[R - 1];
  int64_t Rows = 1;
  for (unsigned D = 0; D + 1 < R; ++D)
    Rows *= OutDims[D];
  llvm::SmallVector<int64_t, 6> Idx(R, 0);
  int64_t Offset = 0;
  for (int64_t Row = 0; Row < Rows; ++Row) {
    const T *From = In + Offset;
    for (int64_t J = 0; J < Inner; ++J)
      Dst[J] = From[J * Step];
    Dst += Inner;
    for (unsigned D = R - 1; D-- > 0;) {
      Offset += Src[D];
      if (++Idx[D] < OutDims[D])
        break;
      Offset -= Src[D] * OutDims[D];
      Idx[D] = 0;
    }
  }
}

Tensor Tensor::transposed(llvm::ArrayRef<int64_t> Perm,
                          TensorArena *Arena) const {
  unsigned R = rank();
  assert(Perm.size() == R && "perm rank differs from the tensor's");
  llvm::SmallVector<int64_t, 6> InStrides(R, 1), OutDims(R), Src(R);
  for (unsigned I = R; I-- > 1;)
    InStrides[I - 1] = InStrides[I] * Dims[I];
  for (unsigned I = 0; I < R; ++I) {
    OutDims[I] = Dims[Perm[I]];
    Src[I] = InStrides[Perm[I]];
  }
  // Every element is written below: no zero fill first.
  Tensor Out = Arena ? Arena->uninitialized(Elem, OutDims)
                     : Tensor::uninitialized(Elem, OutDims);
  if (Out.numElements() == 0)
    return Out;
  const char *In = static_cast<const char *>(rawData());
  char *Dst = static_cast<char *>(Out.mutableRawData());
  // Undefined elements have no bytes to move.
  withElementWord(Elem, [&](auto Word) {
    permuteInto<decltype(Word)>(In, Dst, OutDims, Src);
  });
  return Out;
}

double Tensor::getDouble(int64_t I) const {
  const char *P = static_cast<const char *>(rawData());
  switch (Elem) {
  case DType::F32:
    return reinterpret_cast<const float *>(P)[I];
  case DType::F64:
    return reinterpret_cast<const double *>(P)[I];
  case DType::F16:
    return halfToFloat(reinterpret_cast<const uint16_t *>(P)[I]);
  case DType::BF16:
    return bf16ToFloat(reinterpret_cast<const uint16_t *>(P)[I]);
  case DType::I8:
    return reinterpret_cast<const int8_t *>(P)[I];
  case DType::U8:
    return reinterpret_cast<const uint8_t *>(P)[I];
  case DType::I16:
    return reinterpret_cast<const int16_t *>(P)[I];
  case DType::U16:
    return reinterpret_cast<const uint16_t *>(P)[I];
  case DType::I32:
    return reinterpret_cast<const int32_t *>(P)[I];
  case DType::U32:
    return reinterpret_cast<const uint32_t *>(P)[I];
  case DType::I64:
    return double(reinterpret_cast<const int64_t *>(P)[I]);
  case DType::U64:
    return double(reinterpret_cast<const uint64_t *>(P)[I]);
  case DType::Bool:
    return reinterpret_cast<const uint8_t *>(P)[I] ? 1.0 : 0.0;
  case DType::Undefined:
    break;
  }
  return 0;
}

int64_t Tensor::getInt64(int64_t I) const {
  const char *P = static_cast<const char *>(rawData());
  switch (Elem) {
  case DType::I64:
    return reinterpret_cast<const int64_t *>(P)[I];
  case DType::U64:
    return int64_t(reinterpret_cast<const uint64_t *>(P)[I]);
  case DType::I32:
    return reinterpret_cast<const int32_t *>(P)[I];
  case DType::U32:
    return reinterpret_cast<const uint32_t *>(P)[I];
  default: {
    // Saturating: converting a float outside int64's range (a float tensor
    // read as Slice starts, say) is undefined behaviour; NaN reads as 0.
    double D = getDouble(I);
    if (!(D == D))
      return 0;
    if (D >= 9223372036854775808.0)
      return std::numeric_limits<int64_t>::max();
    if (D < -9223372036854775808.0)
      return std::numeric_limits<int64_t>::min();
    return int64_t(D);
  }
  }
}

void Tensor::setDouble(int64_t I, double V) {
  char *P = static_cast<char *>(mutableRawData());
  switch (Elem) {
  case DType::F32:
    reinterpret_cast<float *>(P)[I] = float(V);
    break;
  case DType::F64:
    reinterpret_cast<double *>(P)[I] = V;
    break;
  case DType::F16:
    reinterpret_cast<uint16_t *>(P)[I] = floatToHalf(float(V));
    break;
  case DType::BF16:
    reinterpret_cast<uint16_t *>(P)[I] = floatToBF16(float(V));
    break;
  case DType::I8:
    reinterpret_cast<int8_t *>(P)[I] = int8_t(V);
    break;
  case DType::U8:
    reinterpret_cast<uint8_t *>(P)[I] = uint8_t(V);
    break;
  case DType::I16:
    reinterpret_cast<int16_t *>(P)[I] = int16_t(V);
    break;
  case DType::U16:
    reinterpret_cast<uint16_t *>(P)[I] = uint16_t(V);
    break;
  case DType::I32:
    reinterpret_cast<int32_t *>(P)[I] = int32_t(V);
    break;
  case DType::U32:
    reinterpret_cast<uint32_t *>(P)[I] = uint32_t(V);
    break;
  case DType::I64:
    reinterpret_cast<int64_t *>(P)[I] = int64_t(V);
    break;
  case DType::U64:
    reinterpret_cast<uint64_t *>(P)[I] = uint64_t(V);
    break;
  case DType::Bool:
    reinterpret_cast<uint8_t *>(P)[I] = V != 0;
    break;
  case DType::Undefined:
    break;
  }
}

llvm::SmallVector<int64_t, 8> Tensor::toInt64Vector() const {
  llvm::SmallVector<int64_t, 8> R;
  for (int64_t I = 0, E = numElements(); I < E; ++I)
    R.push_back(getInt64(I));
  return R;
}

bool Tensor::bitwiseEqual(const Tensor &O) const {
  if (Elem != O.Elem || Dims != O.Dims)
    return false;
  return byteSize() == 0 ||
         std::memcmp(rawData(), O.rawData(), byteSize()) == 0;
}

} // namespace solder
