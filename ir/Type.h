//===- Type.h - Shapes with static and symbolic dims ------------*- C++ -*-===//
//
// A value's type is an element type plus a shape. Each dim is static (a
// non-negative size), a named symbol ("N", "S": bound to a size at compile
// time) or unknown ("?": produced by shape inference when nothing better is
// known, e.g. a Reshape to a computed shape).
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_IR_TYPE_H
#define SOLDER_IR_TYPE_H

#include "ir/DType.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include <string>

namespace llvm {
class raw_ostream;
}

namespace solder {

/// Largest size a single dim or element count may have. Bigger values from a
/// model (e.g. a dim of 2^40) are rejected with an error, never allocated.
constexpr int64_t MaxDimSize = int64_t(1) << 34;
constexpr int64_t MaxElementCount = int64_t(1) << 34;

class Dim {
public:
  Dim() = default; // unknown
  /*implicit*/ Dim(int64_t Size) : Size(Size) {}
  static Dim symbol(std::string Name) {
    Dim D;
    D.Sym = std::move(Name);
    return D;
  }
  static Dim unknown() { return Dim(); }

  bool isStatic() const { return Size >= 0; }
  bool isSymbol() const { return Size < 0 && !Sym.empty(); }
  bool isUnknown() const { return Size < 0 && Sym.empty(); }
  int64_t size() const {
    assert(isStatic() && "size() of a dynamic dim");
    return Size;
  }
  const std::string &symbol() const { return Sym; }

  bool operator==(const Dim &O) const {
    return Size == O.Size && Sym == O.Sym;
  }
  bool operator!=(const Dim &O) const { return !(*this == O); }

private:
  int64_t Size = -1;
  std::string Sym;
};

using Shape = llvm::SmallVector<Dim, 4>;

/// Element type plus shape. Rank is always known in solder's IR.
struct TensorType {
  DType Elem = DType::Undefined;
  Shape Dims;

  TensorType() = default;
  TensorType(DType Elem, Shape Dims) : Elem(Elem), Dims(std::move(Dims)) {}
  TensorType(DType Elem, llvm::ArrayRef<int64_t> Static);

  unsigned rank() const { return Dims.size(); }
  bool isStatic() const;
  /// Static sizes; asserts isStatic().
  llvm::SmallVector<int64_t, 4> staticDims() const;
  /// Element count of a static shape.
  int64_t numElements() const;
  bool operator==(const TensorType &O) const {
    return Elem == O.Elem && Dims == O.Dims;
  }
  bool operator!=(const TensorType &O) const { return !(*this == O); }
};

/// Prints "f32[N,3,224,224]" / "i64[]" (scalar) / "f32[?,128]".
void printType(llvm::raw_ostream &OS, const TensorType &T);
std::string typeToString(const TensorType &T);
void printDim(llvm::raw_ostream &OS, const Dim &D);

/// Symbol name -> size, supplied at compile time (`--shape N=1`).
using DimBindings = llvm::StringMap<int64_t>;

/// Numpy-style broadcast of two shapes; error text in Err on mismatch.
bool broadcastShapes(llvm::ArrayRef<Dim> A, llvm::ArrayRef<Dim> B, Shape &Out,
                     std::string &Err);

} // namespace solder

#endif
