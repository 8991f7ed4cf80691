//===- Type.cpp - Shapes with static and symbolic dims ---------------------===//
#include "ir/Type.h"
#include "llvm/Support/raw_ostream.h"

namespace solder {

TensorType::TensorType(DType Elem, llvm::ArrayRef<int64_t> Static)
    : Elem(Elem) {
  for (int64_t D : Static)
    Dims.push_back(Dim(D));
}

bool TensorType::isStatic() const {
  for (const Dim &D : Dims)
    if (!D.isStatic())
      return false;
  return true;
}

llvm::SmallVector<int64_t, 4> TensorType::staticDims() const {
  llvm::SmallVector<int64_t, 4> R;
  for (const Dim &D : Dims)
    R.push_back(D.size());
  return R;
}

int64_t TensorType::numElements() const {
  int64_t N = 1;
  for (const Dim &D : Dims)
    N *= D.size();
  return N;
}

void printDim(llvm::raw_ostream &OS, const Dim &D) {
  if (D.isStatic())
    OS << D.size();
  else if (D.isSymbol())
    OS << D.symbol();
  else
    OS << '?';
}

void printType(llvm::raw_ostream &OS, const TensorType &T) {
  OS << dtypeName(T.Elem) << '[';
  for (unsigned I = 0; I < T.Dims.size(); ++I) {
    if (I)
      OS << ',';
    printDim(OS, T.Dims[I]);
  }
  OS << ']';
}

std::string typeToString(const TensorType &T) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  printType(OS, T);
  return OS.str();
}

bool broadcastShapes(llvm::ArrayRef<Dim> A, llvm::ArrayRef<Dim> B, Shape &Out,
                     std::string &Err) {
  size_t R = std::max(A.size(), B.size());
  Out.assign(R, Dim());
  for (size_t I = 0; I < R; ++I) {
    const Dim *DA = I < R - A.size() ? nullptr : &A[I - (R - A.size())];
    const Dim *DB = I < R - B.size() ? nullptr : &B[I - (R - B.size())];
    if (!DA) {
      Out[I] = *DB;
      continue;
    }
    if (!DB) {
      Out[I] = *DA;
      continue;
    }
    if (*DA == *DB && !DA->isUnknown()) {
      Out[I] = *DA;
    } else if (DA->isStatic() && DA->size() == 1) {
      Out[I] = *DB;
    } else if (DB->isStatic() && DB->size() == 1) {
      Out[I] = *DA;
    } else if (DA->isStatic() && DB->isStatic()) {
      Err = "cannot broadcast dims " + std::to_string(DA->size()) + " and " +
            std::to_string(DB->size());
      return false;
    } else if (DA->isStatic()) {
      Out[I] = *DA; // the dynamic side must be 1 or equal
    } else if (DB->isStatic()) {
      Out[I] = *DB;
    } else {
      Out[I] = Dim::unknown();
    }
  }
  return true;
}

} // namespace solder
