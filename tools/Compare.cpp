//===- Compare.cpp - Tolerance comparison of tensors ----------------------===//
#include "tools/Compare.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <cmath>

using namespace llvm;

namespace solder {

/// "[1,0,2]": the multi-index of flat element I.
static std::string indexText(ArrayRef<int64_t> Dims, int64_t I) {
  SmallVector<int64_t, 6> Idx(Dims.size());
  for (size_t D = Dims.size(); D-- > 0;) {
    Idx[D] = Dims[D] ? I % Dims[D] : 0;
    I = Dims[D] ? I / Dims[D] : 0;
  }
  std::string S = "[";
  for (size_t D = 0; D < Idx.size(); ++D)
    S += (D ? "," : "") + std::to_string(Idx[D]);
  return S + "]";
}

CompareResult compareTensors(const Tensor &Actual, const Tensor &Expected,
                             const Tolerance &Tol) {
  CompareResult R;
  if (Actual.type() != Expected.type()) {
    R.Match = false;
    R.Reason = "got " + typeToString(Actual.type()) + ", expected " +
               typeToString(Expected.type());
    return R;
  }
  bool Exact = !isFloat(Actual.dtype());
  int64_t N = Actual.numElements();
  int64_t Bad = 0, FirstBad = -1, MaxAbsAt = -1, MaxRelAt = -1;
  double MaxAbs = 0, MaxRel = 0;
  for (int64_t I = 0; I < N; ++I) {
    double A = Actual.getDouble(I), B = Expected.getDouble(I);
    bool Ok;
    double Abs;
    if (Exact) {
      // getDouble loses precision above 2^53: compare integers as integers.
      Ok = Actual.getInt64(I) == Expected.getInt64(I);
      Abs = Ok ? 0 : std::fabs(A - B);
    } else if (std::isnan(A) || std::isnan(B)) {
      Ok = std::isnan(A) && std::isnan(B);
      Abs = Ok ? 0 : INFINITY;
    } else if (std::isinf(A) || std::isinf(B)) {
      Ok = A == B;
      Abs = Ok ? 0 : INFINITY;
    } else {
      Abs = std::fabs(A - B);
      Ok = Abs <= Tol.ATol + Tol.RTol * std::fabs(B);
    }
    if (Ok)
      continue;
    ++Bad;
    if (FirstBad < 0)
      FirstBad = I;
    double Rel = B != 0 ? Abs / std::fabs(B) : INFINITY;
    if (MaxAbsAt < 0 || Abs > MaxAbs) {
      MaxAbs = Abs;
      MaxAbsAt = I;
    }
    if (MaxRelAt < 0 || Rel > MaxRel) {
      MaxRel = Rel;
      MaxRelAt = I;
    }
  }
  if (!Bad)
    return R;
  R.Match = false;
  raw_string_ostream OS(R.Reason);
  ArrayRef<int64_t> Dims = Actual.dims();
  OS << Bad << " of " << N << " elements differ";
  if (Exact) {
    OS << "; first at " << indexText(Dims, FirstBad) << " (got "
       << Actual.getInt64(FirstBad) << ", expected "
       << Expected.getInt64(FirstBad) << ")";
  } else {
    OS << format("; max abs error %.3g at ", MaxAbs)
       << indexText(Dims, MaxAbsAt)
       << format(" (got %.7g, expected %.7g)", Actual.getDouble(MaxAbsAt),
                 Expected.getDouble(MaxAbsAt))
       << format("; max rel error %.3g at ", MaxRel)
       << indexText(Dims, MaxRelAt)
       << format(" (got %.7g, expected %.7g)", Actual.getDouble(MaxRelAt),
                 Expected.getDouble(MaxRelAt))
       << format(" [rtol %g, atol %g]", Tol.RTol, Tol.ATol);
  }
  OS.flush();
  return R;
}

ErrorStats measureErrors(const Tensor &Actual, const Tensor &Expected) {
  ErrorStats S;
  if (Actual.type() != Expected.type()) {
    S.MaxAbs = S.MaxRel = INFINITY;
    return S;
  }
  for (int64_t I = 0, N = Actual.numElements(); I < N; ++I) {
    double A = Actual.getDouble(I), B = Expected.getDouble(I);
    if (std::isfinite(B))
      S.MaxRef = std::max(S.MaxRef, std::fabs(B));
    double Abs;
    if (std::isnan(A) || std::isnan(B))
      Abs = std::isnan(A) && std::isnan(B) ? 0 : INFINITY;
    else if (std::isinf(A) || std::isinf(B))
      Abs = A == B ? 0 : INFINITY;
    else
      Abs = std::fabs(A - B);
    if (Abs == 0)
      continue;
    S.MaxAbs = std::max(S.MaxAbs, Abs);
    S.MaxRel = std::max(S.MaxRel, B != 0 ? Abs / std::fabs(B) : INFINITY);
  }
  return S;
}

} // namespace solder
