//===- ResizeSpec.cpp - What a Resize node computes, per axis -------------===//
#include "ir/ResizeSpec.h"
#include "ir/OpRegistry.h"
#include <algorithm>
#include <cmath>

namespace solder {

bool ResizeAxisTaps::isIdentity() const {
  if (TapsPerOut != 1)
    return false;
  for (int64_t O = 0; O < OutSize; ++O)
    if (Index[O] != O || Weight[O] != 1.0 || Extrapolated[O])
      return false;
  return true;
}

namespace {

enum class Interp { Nearest, Linear, Cubic };

/// The attributes and per-axis scales of one Resize node.
struct Params {
  Interp Mode = Interp::Nearest;
  std::string Coord, NearestMode;
  double CubicA = -0.75;
  bool ExcludeOutside = false;
  std::vector<double> Scale;
  std::vector<int64_t> Out;
  std::vector<double> RoiStart, RoiEnd;
};

llvm::Error nodeErr(const Node &N, const llvm::Twine &Msg) {
  return makeError(N.describe() + ": " + Msg);
}

/// The resized axes (the `axes` attribute, else all), normalized.
llvm::Expected<std::vector<int64_t>> resizedAxes(const Node &N, int64_t R) {
  std::vector<int64_t> Axes = N.attrs().getInts("axes");
  if (!N.attrs().has("axes"))
    for (int64_t D = 0; D < R; ++D)
      Axes.push_back(D);
  std::vector<bool> Seen(R, false);
  for (int64_t &A : Axes) {
    if (A < -R || A >= R)
      return nodeErr(N, "axis " + llvm::Twine(A) + " out of range");
    if (A < 0)
      A += R;
    if (Seen[A])
      return nodeErr(N, "axis " + llvm::Twine(A) + " is repeated");
    Seen[A] = true;
  }
  return Axes;
}

/// Scales and output dims, as op_resize.py's _interpolate_nd computes them.
llvm::Error scalesAndSizes(const Node &N, llvm::ArrayRef<int64_t> In,
                           const Tensor *Scales, const Tensor *Sizes,
                           Params &P) {
  int64_t R = In.size();
  auto Axes = resizedAxes(N, R);
  if (!Axes)
    return Axes.takeError();
  P.Scale.assign(R, 1.0);
  P.Out.assign(In.begin(), In.end());
  bool HaveScales = Scales && Scales->numElements() > 0;
  bool HaveSizes = Sizes && Sizes->numElements() > 0;
  if (HaveScales == HaveSizes)
    return nodeErr(N, "needs exactly one of scales and sizes");
  const Tensor &T = HaveScales ? *Scales : *Sizes;
  if (T.numElements() != int64_t(Axes->size()))
    return nodeErr(N, llvm::Twine(HaveScales ? "scales" : "sizes") + " has " +
                          llvm::Twine(T.numElements()) + " values for " +
                          llvm::Twine(Axes->size()) + " resized axes");
  if (HaveScales) {
    for (size_t I = 0; I < Axes->size(); ++I) {
      // The model's float32 scale, widened: the ONNX reference multiplies
      // it by the dim in float64 and truncates.
      double S = T.getDouble(I);
      if (!(S > 0) || !std::isfinite(S))
        return nodeErr(N, "scales must be positive, got " + std::to_string(S));
      int64_t D = (*Axes)[I];
      P.Scale[D] = S;
      double O = std::trunc(S * double(In[D]));
      if (O > double(MaxDimSize))
        return nodeErr(N, "output dim " + std::to_string(O) + " is too large");
      P.Out[D] = int64_t(O);
    }
    return llvm::Error::success();
  }
  if (T.dtype() != DType::I64)
    return nodeErr(N, "sizes must be i64");
  for (size_t I = 0; I < Axes->size(); ++I) {
    int64_t D = (*Axes)[I], O = T.getInt64(I);
    if (O < 0 || O > MaxDimSize)
      return nodeErr(N, "size " + llvm::Twine(O) + " out of range");
    if (In[D] == 0)
      return nodeErr(N, "cannot resize an empty dim to a size");
    P.Out[D] = O;
    P.Scale[D] = double(O) / double(In[D]);
  }
  std::string Policy =
      N.attrs().getString("keep_aspect_ratio_policy", "stretch");
  if (Policy == "stretch")
    return llvm::Error::success();
  if (Policy != "not_larger" && Policy != "not_smaller")
    return nodeErr(N, "keep_aspect_ratio_policy '" + Policy +
                          "' is not stretch, not_larger or not_smaller");
  double S = P.Scale[(*Axes)[0]];
  for (int64_t D : *Axes)
    S = Policy == "not_larger" ? std::min(S, P.Scale[D])
                               : std::max(S, P.Scale[D]);
  for (int64_t D : *Axes) {
    P.Scale[D] = S;
    P.Out[D] = int64_t(S * double(In[D]) + 0.5); // round half up
  }
  return llvm::Error::success();
}

llvm::Error readAttrs(const Node &N, int64_t R, const Tensor *Roi, Params &P) {
  const AttrMap &A = N.attrs();
  std::string Mode = A.getString("mode", "nearest");
  if (Mode == "nearest")
    P.Mode = Interp::Nearest;
  else if (Mode == "linear")
    P.Mode = Interp::Linear;
  else if (Mode == "cubic")
    P.Mode = Interp::Cubic;
  else
    return nodeErr(N, "mode '" + Mode + "' is not nearest, linear or cubic");
  if (A.getInt("antialias", 0))
    return nodeErr(N, "antialias=1 is not supported");
  P.Coord = A.getString("coordinate_transformation_mode", "half_pixel");
  static const char *const Coords[] = {
      "half_pixel",    "half_pixel_symmetric", "pytorch_half_pixel",
      "align_corners", "asymmetric",           "tf_crop_and_resize"};
  if (llvm::find(Coords, P.Coord) == std::end(Coords))
    return nodeErr(N, "coordinate_transformation_mode '" + P.Coord +
                          "' is unknown");
  P.NearestMode = A.getString("nearest_mode", "round_prefer_floor");
  static const char *const Nearests[] = {"round_prefer_floor",
                                         "round_prefer_ceil", "floor", "ceil"};
  if (llvm::find(Nearests, P.NearestMode) == std::end(Nearests))
    return nodeErr(N, "nearest_mode '" + P.NearestMode + "' is unknown");
  P.CubicA = A.getFloat("cubic_coeff_a", -0.75f);
  P.ExcludeOutside = A.getInt("exclude_outside", 0) != 0;
  P.RoiStart.assign(R, 0.0);
  P.RoiEnd.assign(R, 1.0);
  if (P.Coord != "tf_crop_and_resize")
    return llvm::Error::success();
  if (!Roi || Roi->numElements() == 0)
    return nodeErr(N, "tf_crop_and_resize needs roi");
  auto Axes = resizedAxes(N, R);
  if (!Axes)
    return Axes.takeError();
  int64_t K = Axes->size();
  if (Roi->numElements() != 2 * K)
    return nodeErr(N, "roi has " + llvm::Twine(Roi->numElements()) +
                          " values, expected " + llvm::Twine(2 * K));
  for (int64_t I = 0; I < K; ++I) {
    P.RoiStart[(*Axes)[I]] = Roi->getDouble(I);
    P.RoiEnd[(*Axes)[I]] = Roi->getDouble(K + I);
  }
  return llvm::Error::success();
}

/// The source coordinate of output position Y (and whether it lies outside
/// the input, for tf_crop_and_resize).
double sourceCoord(const Params &P, int64_t D, int64_t In, double Y,
                   bool &Outside) {
  double S = P.Scale[D];
  double OutW = S * double(In); // op_resize.py's output_width
  int64_t OutInt = P.Out[D];
  Outside = false;
  const std::string &C = P.Coord;
  if (C == "align_corners")
    return OutW == 1 ? 0.0 : Y * double(In - 1) / (OutW - 1);
  if (C == "asymmetric")
    return Y / S;
  if (C == "tf_crop_and_resize") {
    double R0 = P.RoiStart[D], R1 = P.RoiEnd[D];
    double X = OutW == 1 ? (R1 - R0) * double(In - 1) / 2
                         : Y * (R1 - R0) * double(In - 1) / (OutW - 1);
    X += R0 * double(In - 1);
    Outside = X < 0 || X > double(In - 1);
    return X;
  }
  if (C == "pytorch_half_pixel")
    return OutW == 1 ? -0.5 : (Y + 0.5) / S - 0.5;
  if (C == "half_pixel_symmetric") {
    double Adjustment = double(OutInt) / OutW;
    double Offset = double(In) / 2 * (1 - Adjustment);
    return Offset + (Y + 0.5) / S - 0.5;
  }
  return (Y + 0.5) / S - 0.5; // half_pixel
}

std::vector<double> coefficients(const Params &P, double Ratio) {
  switch (P.Mode) {
  case Interp::Nearest: {
    if (Ratio == 1.0)
      return {0, 1};
    const std::string &M = P.NearestMode;
    bool Up = M == "round_prefer_floor"  ? Ratio > 0.5
              : M == "round_prefer_ceil" ? Ratio >= 0.5
                                         : M == "ceil";
    return {Up ? 0.0 : 1.0, Up ? 1.0 : 0.0};
  }
  case Interp::Linear:
    return {1 - Ratio, Ratio};
  case Interp::Cubic: {
    double A = P.CubicA, R = Ratio, Q = 1 - Ratio;
    return {((A * (R + 1) - 5 * A) * (R + 1) + 8 * A) * (R + 1) - 4 * A,
            ((A + 2) * R - (A + 3)) * R * R + 1,
            ((A + 2) * Q - (A + 3)) * Q * Q + 1,
            ((A * (Q + 1) - 5 * A) * (Q + 1) + 8 * A) * (Q + 1) - 4 * A};
  }
  }
  return {};
}

ResizeAxisTaps identityTaps(int64_t Size) {
  ResizeAxisTaps T;
  T.OutSize = Size;
  for (int64_t O = 0; O < Size; ++O) {
    T.Index.push_back(O);
    T.Weight.push_back(1.0);
  }
  T.Extrapolated.assign(Size, false);
  return T;
}

/// op_resize.py's _interpolate_1d_along_axis, position by position.
ResizeAxisTaps axisTaps(const Params &P, int64_t D, int64_t In) {
  ResizeAxisTaps T;
  T.OutSize = P.Out[D];
  T.TapsPerOut = P.Mode == Interp::Cubic ? 4 : 2;
  int64_t Nt = T.TapsPerOut, Pad = Nt / 2;
  for (int64_t O = 0; O < T.OutSize; ++O) {
    bool Outside;
    double X = sourceCoord(P, D, In, double(O), Outside);
    double XInt = std::floor(X);
    // The ratio is in (0, 1]: an exact source position prefers its left
    // neighbour's window.
    double Ratio = X == XInt ? 1.0 : X - XInt;
    std::vector<double> W = coefficients(P, Ratio);
    double XP = X + double(Pad);
    double Pf = std::floor(XP);
    int64_t Start = int64_t(Pf) + (XP == Pf ? -Pad : -Pad + 1);
    double Sum = 0;
    for (int64_t K = 0; K < Nt; ++K) {
      int64_t Idx = Start + K - Pad;
      if (P.ExcludeOutside && (Idx < 0 || Idx >= In))
        W[K] = 0;
      Sum += W[K];
    }
    for (int64_t K = 0; K < Nt; ++K) {
      int64_t Idx = Start + K - Pad;
      T.Index.push_back(std::clamp<int64_t>(Idx, 0, In - 1));
      T.Weight.push_back(P.ExcludeOutside ? W[K] / (Sum == 0 ? 1 : Sum) : W[K]);
    }
    T.Extrapolated.push_back(Outside);
  }
  return T;
}

} // namespace

llvm::Expected<std::vector<int64_t>>
resizeOutputDims(const Node &N, llvm::ArrayRef<int64_t> In,
                 const Tensor *Scales, const Tensor *Sizes) {
  Params P;
  if (auto E = scalesAndSizes(N, In, Scales, Sizes, P))
    return std::move(E);
  return P.Out;
}

llvm::Expected<ResizeSpec>
resolveResize(const Node &N, llvm::ArrayRef<int64_t> In, const Tensor *Roi,
              const Tensor *Scales, const Tensor *Sizes) {
  Params P;
  if (auto E = readAttrs(N, In.size(), Roi, P))
    return std::move(E);
  if (auto E = scalesAndSizes(N, In, Scales, Sizes, P))
    return std::move(E);
  ResizeSpec S;
  S.OutDims = P.Out;
  S.Nearest = P.Mode == Interp::Nearest;
  S.ExtrapolationValue = N.attrs().getFloat("extrapolation_value", 0.0f);
  for (size_t D = 0; D < In.size(); ++D) {
    // An axis kept as it is (the reference skips it); with roi only where
    // the roi covers it whole.
    auto Close = [](double A, double B) {
      return std::fabs(A - B) <= 1e-9 * std::max(std::fabs(A), std::fabs(B));
    };
    bool Same = Close(P.Scale[D], 1.0) && P.Out[D] == In[D] &&
                (P.Coord != "tf_crop_and_resize" ||
                 (Close(P.RoiStart[D], 0.0) && Close(P.RoiEnd[D], 1.0)));
    if (Same || In[D] == 0 || P.Out[D] == 0)
      S.Axes.push_back(identityTaps(P.Out[D]));
    else
      S.Axes.push_back(axisTaps(P, D, In[D]));
  }
  return S;
}

} // namespace solder
