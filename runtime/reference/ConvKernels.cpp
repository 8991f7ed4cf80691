//===- ConvKernels.cpp - Reference Conv and ConvTranspose -----------------===//
//
// Conv and ConvTranspose over 1, 2 or 3 spatial dims, any group count. Both
// lower to OpenBLAS gemm: Conv gathers each group's input windows into a
// column matrix (im2col, skipped for 1x1 stride-1 unpadded kernels) and
// multiplies by the weights; ConvTranspose multiplies the transposed weights
// by the input and scatters the columns back (col2im). 1-D and 2-D problems
// are run as 3-D ones with leading unit dims so one loop nest serves all.
// f32/f64 run natively; f16/bf16 are computed in f32 and rounded once.
//
//===----------------------------------------------------------------------===//
#include "runtime/reference/ConvPoolUtils.h"
#include <algorithm>
#include <cstring>

namespace solder {
namespace ref {

using namespace detail;

namespace {

/// A convolution problem with the spatial geometry padded to 3 dims.
struct ConvProblem {
  int64_t N, C, M, Group;
  WindowGeometry G; // 3 spatial dims
  int64_t inSize() const { return product(G.In); }
  int64_t outSize() const { return product(G.Out); }
  int64_t kernelSize() const { return product(G.Kernel); }
};

/// Prepends unit spatial dims so G has exactly 3.
void padTo3D(WindowGeometry &G) {
  while (G.rank() < 3) {
    G.In.insert(G.In.begin(), 1);
    G.Kernel.insert(G.Kernel.begin(), 1);
    G.Stride.insert(G.Stride.begin(), 1);
    G.Dilation.insert(G.Dilation.begin(), 1);
    G.PadBegin.insert(G.PadBegin.begin(), 0);
    G.PadEnd.insert(G.PadEnd.begin(), 0);
    G.Out.insert(G.Out.begin(), 1);
  }
}

/// First output position o in [0, Out) with Lo <= o*S + Off, and the end of
/// those with o*S + Off < Hi: the run of outputs whose tap lands inside.
std::pair<int64_t, int64_t> validRange(int64_t Off, int64_t S, int64_t Hi,
                                       int64_t Out) {
  // o*S + Off >= 0  <=>  o >= ceil(-Off / S)
  int64_t Lo = Off >= 0 ? 0 : (-Off + S - 1) / S;
  // o*S + Off < Hi  <=>  o < ceil((Hi - Off) / S)
  int64_t End = Hi - Off <= 0 ? 0 : (Hi - Off + S - 1) / S;
  Lo = std::min(Lo, Out);
  End = std::max(Lo, std::min(End, Out));
  return {Lo, End};
}

/// Col[(c,kd,kh,kw), (od,oh,ow)] = X[c, od*sd-pd+kd*dd, ...] or 0 in padding.
template <typename T>
void im2col(const T *X, int64_t Channels, const WindowGeometry &G, T *Col) {
  const int64_t I0 = G.In[0], I1 = G.In[1], I2 = G.In[2];
  const int64_t O0 = G.Out[0], O1 = G.Out[1], O2 = G.Out[2];
  T *R = Col;
  for (int64_t C = 0; C < Channels; ++C)
    for (int64_t K0 = 0; K0 < G.Kernel[0]; ++K0)
      for (int64_t K1 = 0; K1 < G.Kernel[1]; ++K1)
        for (int64_t K2 = 0; K2 < G.Kernel[2]; ++K2) {
          int64_t Off2 = K2 * G.Dilation[2] - G.PadBegin[2];
          auto [Lo, Hi] = validRange(Off2, G.Stride[2], I2, O2);
          for (int64_t D0 = 0; D0 < O0; ++D0) {
            int64_t P0 = D0 * G.Stride[0] - G.PadBegin[0] + K0 * G.Dilation[0];
            if (P0 < 0 || P0 >= I0) {
              std::fill(R, R + O1 * O2, T(0));
              R += O1 * O2;
              continue;
            }
            for (int64_t D1 = 0; D1 < O1; ++D1) {
              int64_t P1 =
                  D1 * G.Stride[1] - G.PadBegin[1] + K1 * G.Dilation[1];
              if (P1 < 0 || P1 >= I1) {
                std::fill(R, R + O2, T(0));
                R += O2;
                continue;
              }
              const T *Src = X + ((C * I0 + P0) * I1 + P1) * I2 + Off2;
              std::fill(R, R + Lo, T(0));
              if (G.Stride[2] == 1) {
                std::memcpy(R + Lo, Src + Lo, (Hi - Lo) * sizeof(T));
              } else {
                for (int64_t D2 = Lo; D2 < Hi; ++D2)
                  R[D2] = Src[D2 * G.Stride[2]];
              }
              std::fill(R + Hi, R + O2, T(0));
              R += O2;
            }
          }
        }
}

/// The adjoint of im2col: Y[m, o...] += Col[(m,k...), i...] where G.In is
/// the (transposed conv's) input and G.Out its output.
template <typename T>
void col2im(const T *Col, int64_t Channels, const WindowGeometry &G, T *Y) {
  const int64_t I0 = G.In[0], I1 = G.In[1], I2 = G.In[2];
  const int64_t O0 = G.Out[0], O1 = G.Out[1], O2 = G.Out[2];
  const T *R = Col;
  for (int64_t C = 0; C < Channels; ++C)
    for (int64_t K0 = 0; K0 < G.Kernel[0]; ++K0)
      for (int64_t K1 = 0; K1 < G.Kernel[1]; ++K1)
        for (int64_t K2 = 0; K2 < G.Kernel[2]; ++K2) {
          int64_t Off2 = K2 * G.Dilation[2] - G.PadBegin[2];
          auto [Lo, Hi] = validRange(Off2, G.Stride[2], O2, I2);
          for (int64_t D0 = 0; D0 < I0; ++D0) {
            int64_t P0 = D0 * G.Stride[0] - G.PadBegin[0] + K0 * G.Dilation[0];
            if (P0 < 0 || P0 >= O0) {
              R += I1 * I2;
              continue;
            }
            for (int64_t D1 = 0; D1 < I1; ++D1, R += I2) {
              int64_t P1 =
                  D1 * G.Stride[1] - G.PadBegin[1] + K1 * G.Dilation[1];
              if (P1 < 0 || P1 >= O1)
                continue;
              T *Dst = Y + ((C * O0 + P0) * O1 + P1) * O2 + Off2;
              for (int64_t D2 = Lo; D2 < Hi; ++D2)
                Dst[D2 * G.Stride[2]] += R[D2];
            }
          }
        }
}

template <typename T>
void addBias(const T *B, int64_t N, int64_t M, int64_t Size, T *Y) {
  if (!B)
    return;
  for (int64_t I = 0; I < N; ++I)
    for (int64_t J = 0; J < M; ++J) {
      T *Row = Y + (I * M + J) * Size;
      for (int64_t K = 0; K < Size; ++K)
        Row[K] += B[J];
    }
}

template <typename T>
void runConv(const ConvProblem &P, const T *X, const T *W, const T *B, T *Y) {
  const WindowGeometry &G = P.G;
  int64_t Cg = P.C / P.Group, Mg = P.M / P.Group;
  int64_t InSz = P.inSize(), OutSz = P.outSize(), KSz = P.kernelSize();
  bool Direct = KSz == 1;
  for (unsigned I = 0; I < 3; ++I)
    Direct &= G.Stride[I] == 1 && G.PadBegin[I] == 0 && G.PadEnd[I] == 0;
  std::vector<T> Col(Direct ? 0 : size_t(Cg * KSz * OutSz));
  for (int64_t N = 0; N < P.N; ++N)
    for (int64_t Gr = 0; Gr < P.Group; ++Gr) {
      const T *XG = X + (N * P.C + Gr * Cg) * InSz;
      const T *ColP = XG;
      if (!Direct) {
        im2col(XG, Cg, G, Col.data());
        ColP = Col.data();
      }
      gemm(false, false, Mg, OutSz, Cg * KSz, T(1), W + Gr * Mg * Cg * KSz,
           Cg * KSz, ColP, OutSz, T(0), Y + (N * P.M + Gr * Mg) * OutSz, OutSz);
    }
  addBias(B, P.N, P.M, OutSz, Y);
}

template <typename T>
void runConvTranspose(const ConvProblem &P, const T *X, const T *W, const T *B,
                      T *Y) {
  // Here G.In is X's spatial size and G.Out Y's; W is C x M/group x K.
  int64_t Cg = P.C / P.Group, Mg = P.M / P.Group;
  int64_t InSz = P.inSize(), OutSz = P.outSize(), KSz = P.kernelSize();
  std::vector<T> Col(size_t(Mg * KSz * InSz));
  for (int64_t N = 0; N < P.N; ++N)
    for (int64_t Gr = 0; Gr < P.Group; ++Gr) {
      gemm(true, false, Mg * KSz, InSz, Cg, T(1), W + Gr * Cg * Mg * KSz,
           Mg * KSz, X + (N * P.C + Gr * Cg) * InSz, InSz, T(0), Col.data(),
           InSz);
      col2im(Col.data(), Mg, P.G, Y + (N * P.M + Gr * Mg) * OutSz);
    }
  addBias(B, P.N, P.M, OutSz, Y);
}

/// Runs Fn<T> on the operand data in the tensors' dtype, or in f32 for
/// f16/bf16 (rounded into Y afterwards).
template <typename Fn>
llvm::Error dispatchFloat(KernelContext &Ctx, const Tensor &X, const Tensor &W,
                          const Tensor *B, Tensor &Y, Fn Run) {
  DType T = X.dtype();
  if (W.dtype() != T || (B && B->dtype() != T))
    return Ctx.error("operands have different element types");
  switch (T) {
  case DType::F32:
    Run(X.data<float>(), W.data<float>(), B ? B->data<float>() : nullptr,
        Y.mutableData<float>());
    return llvm::Error::success();
  case DType::F64:
    Run(X.data<double>(), W.data<double>(), B ? B->data<double>() : nullptr,
        Y.mutableData<double>());
    return llvm::Error::success();
  case DType::F16:
  case DType::BF16: {
    std::vector<float> XS, WS, BS, YS(Y.numElements());
    Run(floatData(X, XS), floatData(W, WS), B ? floatData(*B, BS) : nullptr,
        YS.data());
    storeFloats(YS.data(), Y);
    return llvm::Error::success();
  }
  default:
    return Ctx.error(llvm::Twine("unsupported element type ") + dtypeName(T));
  }
}

/// Common operand checks; fills N, C, M, Group and the kernel shape.
llvm::Error readConvOperands(KernelContext &Ctx, bool Transposed,
                             ConvProblem &P,
                             llvm::SmallVectorImpl<int64_t> &Kernel) {
  const Tensor *X = Ctx.in(0), *W = Ctx.in(1), *B = Ctx.in(2);
  if (!X || !W)
    return Ctx.error("missing X or W");
  if (X->rank() < 3 || X->rank() > 5)
    return Ctx.error("expects 1 to 3 spatial dims, X has rank " +
                     llvm::Twine(X->rank()));
  if (W->rank() != X->rank())
    return Ctx.error("W rank " + llvm::Twine(W->rank()) +
                     " differs from X rank " + llvm::Twine(X->rank()));
  P.N = X->dims()[0];
  P.C = X->dims()[1];
  P.Group = Ctx.attrs().getInt("group", 1);
  if (P.Group < 1 || P.C % P.Group)
    return Ctx.error("group " + llvm::Twine(P.Group) +
                     " does not divide the channel count " + llvm::Twine(P.C));
  if (Transposed) {
    if (W->dims()[0] != P.C)
      return Ctx.error("W dim 0 (" + llvm::Twine(W->dims()[0]) +
                       ") differs from the input channels " + llvm::Twine(P.C));
    P.M = W->dims()[1] * P.Group;
  } else {
    P.M = W->dims()[0];
    if (W->dims()[1] * P.Group != P.C)
      return Ctx.error("W dim 1 (" + llvm::Twine(W->dims()[1]) + ") x group " +
                       llvm::Twine(P.Group) + " differs from the channels " +
                       llvm::Twine(P.C));
    if (P.M % P.Group)
      return Ctx.error("group does not divide the output channels");
  }
  if (B && (B->rank() != 1 || B->dims()[0] != P.M))
    return Ctx.error("bias must have shape [" + llvm::Twine(P.M) + "]");
  Kernel.assign(W->dims().begin() + 2, W->dims().end());
  std::vector<int64_t> KS = Ctx.attrs().getInts("kernel_shape");
  if (!KS.empty() &&
      llvm::ArrayRef<int64_t>(KS) != llvm::ArrayRef<int64_t>(Kernel))
    return Ctx.error("kernel_shape attribute does not match W");
  return llvm::Error::success();
}

/// Spatial geometry of ConvTranspose: the output size from pads, or the
/// pads from output_shape / SAME auto_pad.
llvm::Error computeTransposedWindow(KernelContext &Ctx,
                                    llvm::ArrayRef<int64_t> InSpatial,
                                    llvm::ArrayRef<int64_t> Kernel,
                                    WindowGeometry &G) {
  const AttrMap &A = Ctx.attrs();
  unsigned R = InSpatial.size();
  G.In.assign(InSpatial.begin(), InSpatial.end());
  G.Kernel.assign(Kernel.begin(), Kernel.end());
  std::vector<int64_t> S = A.getInts("strides", std::vector<int64_t>(R, 1));
  std::vector<int64_t> D = A.getInts("dilations", std::vector<int64_t>(R, 1));
  std::vector<int64_t> Pads = A.getInts("pads", std::vector<int64_t>(2 * R, 0));
  std::vector<int64_t> OP =
      A.getInts("output_padding", std::vector<int64_t>(R, 0));
  std::vector<int64_t> OS = A.getInts("output_shape");
  if (OS.size() == R + 2)
    OS.erase(OS.begin(), OS.begin() + 2);
  if (S.size() != R || D.size() != R || Pads.size() != 2 * R ||
      OP.size() != R || (!OS.empty() && OS.size() != R))
    return Ctx.error("strides/dilations/pads/output_padding/output_shape do "
                     "not match " +
                     llvm::Twine(R) + " spatial dims");
  std::string AutoPad = A.getString("auto_pad", "NOTSET");
  bool Same = AutoPad == "SAME_UPPER" || AutoPad == "SAME_LOWER";
  if (!Same && AutoPad != "NOTSET" && AutoPad != "VALID")
    return Ctx.error("unknown auto_pad '" + AutoPad + "'");
  G.Stride.assign(S.begin(), S.end());
  G.Dilation.assign(D.begin(), D.end());
  G.PadBegin.assign(R, 0);
  G.PadEnd.assign(R, 0);
  G.Out.assign(R, 0);
  for (unsigned I = 0; I < R; ++I) {
    if (S[I] < 1 || D[I] < 1)
      return Ctx.error("strides and dilations must be positive");
    int64_t Full = S[I] * (G.In[I] - 1) + OP[I] + G.effectiveKernel(I);
    if (!OS.empty() || Same) {
      G.Out[I] = OS.empty() ? G.In[I] * S[I] : OS[I];
      // Total is negative when the requested output is larger than the
      // scattered region; halve it rounding down, as ONNX's reference does,
      // so the extra rows land at the end.
      int64_t Total = Full - G.Out[I];
      int64_t Half = Total >= 0 ? Total / 2 : -((-Total + 1) / 2);
      G.PadBegin[I] = AutoPad == "SAME_UPPER" ? Half : Total - Half;
      G.PadEnd[I] = Total - G.PadBegin[I];
    } else {
      if (AutoPad == "NOTSET") {
        G.PadBegin[I] = Pads[I];
        G.PadEnd[I] = Pads[I + R];
      }
      G.Out[I] = Full - G.PadBegin[I] - G.PadEnd[I];
    }
    if (G.Out[I] < 0)
      return Ctx.error("negative output size");
  }
  return llvm::Error::success();
}

} // namespace

llvm::Error evalConv(KernelContext &Ctx) {
  ConvProblem P;
  llvm::SmallVector<int64_t, 3> Kernel;
  if (auto E = readConvOperands(Ctx, /*Transposed=*/false, P, Kernel))
    return E;
  const Tensor &X = *Ctx.in(0), &W = *Ctx.in(1);
  if (auto E = computeWindow(Ctx, X.dims().drop_front(2), Kernel,
                             /*CeilMode=*/false, P.G))
    return E;
  llvm::SmallVector<int64_t, 5> YDims = {P.N, P.M};
  YDims.append(P.G.Out.begin(), P.G.Out.end());
  padTo3D(P.G);
  if (!fitsBlas(P.M, P.outSize(), P.C * P.kernelSize()))
    return Ctx.error("problem too large for BLAS");
  Tensor Y(X.dtype(), YDims);
  if (auto E = dispatchFloat(Ctx, X, W, Ctx.in(2), Y,
                             [&](auto *XP, auto *WP, auto *BP, auto *YP) {
                               runConv(P, XP, WP, BP, YP);
                             }))
    return E;
  Ctx.Results[0] = std::move(Y);
  return llvm::Error::success();
}

llvm::Error evalConvTranspose(KernelContext &Ctx) {
  ConvProblem P;
  llvm::SmallVector<int64_t, 3> Kernel;
  if (auto E = readConvOperands(Ctx, /*Transposed=*/true, P, Kernel))
    return E;
  const Tensor &X = *Ctx.in(0), &W = *Ctx.in(1);
  if (auto E =
          computeTransposedWindow(Ctx, X.dims().drop_front(2), Kernel, P.G))
    return E;
  llvm::SmallVector<int64_t, 5> YDims = {P.N, P.M};
  YDims.append(P.G.Out.begin(), P.G.Out.end());
  padTo3D(P.G);
  if (!fitsBlas(P.M * P.kernelSize(), P.inSize(), P.C))
    return Ctx.error("problem too large for BLAS");
  Tensor Y(X.dtype(), YDims);
  if (auto E = dispatchFloat(Ctx, X, W, Ctx.in(2), Y,
                             [&](auto *XP, auto *WP, auto *BP, auto *YP) {
                               runConvTranspose(P, XP, WP, BP, YP);
                             }))
    return E;
  Ctx.Results[0] = std::move(Y);
  return llvm::Error::success();
}

} // namespace ref
} // namespace solder
