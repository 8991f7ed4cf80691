//===- LibraryEmulator.cpp - A plan's library calls on the CPU ------------===//
#include "LibraryEmulator.h"
#include "ir/DType.h"
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace solder {
namespace emu {

namespace {

llvm::Error emuError(const llvm::Twine &Msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), Msg);
}

/// Element I of a buffer of type T, as double.
double load(DType T, const void *P, int64_t I) {
  switch (T) {
  case DType::F32:
    return static_cast<const float *>(P)[I];
  case DType::F64:
    return static_cast<const double *>(P)[I];
  case DType::F16:
    return halfToFloat(static_cast<const uint16_t *>(P)[I]);
  case DType::BF16:
    return bf16ToFloat(static_cast<const uint16_t *>(P)[I]);
  default:
    return NAN;
  }
}

void store(DType T, void *P, int64_t I, double V) {
  switch (T) {
  case DType::F32:
    static_cast<float *>(P)[I] = float(V);
    return;
  case DType::F64:
    static_cast<double *>(P)[I] = V;
    return;
  case DType::F16:
    static_cast<uint16_t *>(P)[I] = floatToHalf(float(V));
    return;
  case DType::BF16:
    static_cast<uint16_t *>(P)[I] = floatToBF16(float(V));
    return;
  default:
    return;
  }
}

bool supported(DType T) {
  return T == DType::F32 || T == DType::F64 || T == DType::F16 ||
         T == DType::BF16;
}

/// cuBLASLt's GELU epilogue: the tanh approximation.
double gelu(double X) {
  return 0.5 * X *
         (1.0 + std::tanh(0.7978845608028654 * (X + 0.044715 * X * X * X)));
}

/// Element offsets of batch B in each operand (strided or pointer arrays).
struct BatchOffsets {
  int64_t A = 0, B = 0, D = 0;
};

BatchOffsets batchOffsets(const GemmConfig &C, int64_t Batch) {
  BatchOffsets O;
  if (!C.pointerArrays()) {
    O.A = Batch * C.StrideA;
    O.B = Batch * C.StrideB;
    O.D = Batch * C.StrideD;
    return O;
  }
  for (size_t I = C.BatchDims.size(); I-- > 0;) {
    int64_t Idx = Batch % C.BatchDims[I];
    Batch /= C.BatchDims[I];
    O.A += Idx * C.BatchStrideA[I];
    O.B += Idx * C.BatchStrideB[I];
    O.D += Idx * C.BatchStrideD[I];
  }
  return O;
}

/// Offset of element Idx (in NCHW order) of a tensor of Dims stored NCHW,
/// or channels last when Nhwc (the filter's KRSC is the same rule).
int64_t offsetOf(llvm::ArrayRef<int64_t> Dims, llvm::ArrayRef<int64_t> Idx,
                 bool Nhwc) {
  int64_t Off = 0;
  if (!Nhwc) {
    for (size_t I = 0; I < Dims.size(); ++I)
      Off = Off * Dims[I] + Idx[I];
    return Off;
  }
  Off = Idx[0];
  for (size_t I = 2; I < Dims.size(); ++I)
    Off = Off * Dims[I] + Idx[I];
  return Off * Dims[1] + Idx[1];
}

int64_t product(llvm::ArrayRef<int64_t> Dims) {
  int64_t N = 1;
  for (int64_t D : Dims)
    N *= D;
  return N;
}

/// Steps Idx (in NCHW order) to the next element of Dims; false past the
/// last.
bool next(llvm::ArrayRef<int64_t> Dims, std::vector<int64_t> &Idx) {
  for (size_t I = Dims.size(); I-- > 0;) {
    if (++Idx[I] < Dims[I])
      return true;
    Idx[I] = 0;
  }
  return false;
}

} // namespace

llvm::Error runGemm(const GemmConfig &C, Resolver Where) {
  if (!supported(C.Elem))
    return emuError("matmul of " + dtypeName(C.Elem) + " is not emulated");
  const void *A = Where(C.A), *B = Where(C.B);
  void *D = Where(C.D);
  const void *Bias = C.hasBias() ? Where(C.BiasVec) : nullptr;
  const void *CSep =
      C.CFrom == GemmConfig::CSource::Separate ? Where(C.C) : nullptr;
  double Beta = C.CFrom == GemmConfig::CSource::None ? 0.0 : C.Beta;
  std::vector<double> Acc(size_t(C.M * C.N));
  for (int64_t Bt = 0; Bt < C.Batch; ++Bt) {
    BatchOffsets O = batchOffsets(C, Bt);
    for (int64_t J = 0; J < C.N; ++J)
      for (int64_t I = 0; I < C.M; ++I) {
        double S = 0;
        for (int64_t K = 0; K < C.K; ++K) {
          int64_t AI = C.TransA ? K + I * C.Lda : I + K * C.Lda;
          int64_t BI = C.TransB ? J + K * C.Ldb : K + J * C.Ldb;
          S += load(C.Elem, A, O.A + AI) * load(C.Elem, B, O.B + BI);
        }
        Acc[size_t(I + J * C.M)] = S;
      }
    for (int64_t J = 0; J < C.N; ++J)
      for (int64_t I = 0; I < C.M; ++I) {
        int64_t DI = O.D + I + J * C.Ldd;
        double X = C.Alpha * Acc[size_t(I + J * C.M)];
        if (Beta != 0)
          X += Beta * load(C.Elem, CSep ? CSep : D, DI);
        if (Bias)
          X += load(C.Elem, Bias, I);
        switch (C.Epi) {
        case GemmConfig::Epilogue::Relu:
        case GemmConfig::Epilogue::ReluBias:
          X = X > 0 ? X : 0;
          break;
        case GemmConfig::Epilogue::Gelu:
        case GemmConfig::Epilogue::GeluBias:
          X = gelu(X);
          break;
        default:
          break;
        }
        store(C.Elem, D, DI, X);
      }
  }
  return llvm::Error::success();
}

/// One pointwise operation as cuDNN's documentation defines it (RELU_FWD:
/// clamped to [Lower, Upper], Slope times the distance below Lower).
static double pointwise(const ConvGraphOp &O, double X, double B) {
  switch (O.Mode) {
  case ConvPointwise::Add:
    return X + B;
  case ConvPointwise::Sub:
    return X - B;
  case ConvPointwise::Mul:
    return X * B;
  case ConvPointwise::Div:
    return X / B;
  case ConvPointwise::Max:
    return std::max(X, B);
  case ConvPointwise::Min:
    return std::min(X, B);
  case ConvPointwise::Relu:
    if (X < O.Lower)
      return O.Lower + O.Slope * (X - O.Lower);
    return std::min(X, double(O.Upper));
  case ConvPointwise::Sigmoid:
    return 1 / (1 + std::exp(-X));
  case ConvPointwise::Tanh:
    return std::tanh(X);
  case ConvPointwise::Elu:
    return X > 0 ? X : O.Slope * (std::exp(X) - 1);
  case ConvPointwise::Gelu:
    return 0.5 * X * (1 + std::erf(X / std::sqrt(2.0)));
  case ConvPointwise::GeluTanh:
    return 0.5 * X *
           (1 + std::tanh(0.7978845608028654 * (X + 0.044715 * X * X * X)));
  case ConvPointwise::Softplus:
    return X > 0 ? X + std::log1p(std::exp(-X)) : std::log1p(std::exp(X));
  case ConvPointwise::Exp:
    return std::exp(X);
  case ConvPointwise::Log:
    return std::log(X);
  case ConvPointwise::Neg:
    return -X;
  case ConvPointwise::Abs:
    return std::fabs(X);
  case ConvPointwise::Sqrt:
    return std::sqrt(X);
  case ConvPointwise::Reciprocal:
    return 1 / X;
  case ConvPointwise::Erf:
    return std::erf(X);
  }
  return X;
}

/// The pointwise chain of a convolution graph over the accumulated sums
/// (NCHW-ordered, packed), each operand read through its own dims and
/// strides (broadcast where a dim is 1), the output stored NHWC.
static llvm::Error runConvGraph(const ConvConfig &C,
                                const std::vector<double> &Sum,
                                Resolver Where) {
  using Kind = ConvGraphTensor::Kind;
  size_t N = C.GraphTensors.size();
  if (N == 0 || C.GraphReads.size() != N || C.YDims.size() != 4)
    return emuError("a malformed convolution graph");
  std::vector<const void *> Reads(N, nullptr);
  void *Out = nullptr;
  DType OutElem = C.Elem;
  for (size_t I = 0; I < N; ++I) {
    const ConvGraphTensor &T = C.GraphTensors[I];
    if (T.K == Kind::Operand) {
      if (!supported(T.Elem))
        return emuError("a graph operand of an unsupported type");
      Reads[I] = Where(C.GraphReads[I]);
    } else if (T.K == Kind::Output) {
      Out = Where(C.Y);
      OutElem = T.Elem;
    }
  }
  if (!Out || !supported(OutElem))
    return emuError("a convolution graph without a supported output");
  std::vector<double> V(N, 0.0);
  std::vector<int64_t> Idx(4, 0);
  do {
    for (size_t I = 0; I < N; ++I) {
      const ConvGraphTensor &T = C.GraphTensors[I];
      if (T.K == Kind::Scalar) {
        V[I] = T.ByValue;
      } else if (T.K == Kind::Operand) {
        int64_t At = 0;
        for (int D = 0; D < 4; ++D)
          At += (T.Dims[D] == 1 ? 0 : Idx[D]) * T.Strides[D];
        V[I] = load(T.Elem, Reads[I], At);
      }
    }
    V[0] = Sum[size_t(offsetOf(C.YDims, Idx, false))];
    size_t Last = 0;
    for (const ConvGraphOp &O : C.GraphOps) {
      V[size_t(O.Y)] =
          pointwise(O, V[size_t(O.X)], O.B >= 0 ? V[size_t(O.B)] : 0.0);
      Last = size_t(O.Y);
    }
    store(OutElem, Out, offsetOf(C.YDims, Idx, /*Nhwc=*/true), V[Last]);
  } while (next(C.YDims, Idx));
  return llvm::Error::success();
}

llvm::Error runConv(const ConvConfig &C, Resolver Where) {
  if (!supported(C.Elem))
    return emuError("convolution of " + dtypeName(C.Elem) + " is not emulated");
  size_t Spatial = C.XDims.size() - 2;
  if (C.XDims.size() < 3 || C.WDims.size() != C.XDims.size() ||
      C.YDims.size() != C.XDims.size() || C.Pads.size() != Spatial ||
      C.Strides.size() != Spatial || C.Dilations.size() != Spatial)
    return emuError("a convolution with inconsistent dims");
  const void *X = Where(C.X), *W = Where(C.W);
  void *Y = Where(C.Y);
  // Forward: y[n,k,p] = sum over c of its group and the window of x[n,c,
  // p * stride - pad + r * dilation] w[k,c,r]. Transposed (cuDNN's backward
  // data, X = dy, Y = dx): dx[n,c,h] = sum over k and r with h = p * stride
  // - pad + r * dilation of dy[n,k,p] w[k,c,r]. Both as one scatter from
  // the "forward input" side (Fwd) to the "forward output" side (Out).
  llvm::ArrayRef<int64_t> FwdIn = C.Transpose ? C.YDims : C.XDims;
  llvm::ArrayRef<int64_t> FwdOut = C.Transpose ? C.XDims : C.YDims;
  int64_t G = C.Groups, Cg = C.WDims[1], Kg = C.WDims[0] / G;
  if (FwdIn[1] != Cg * G || FwdOut[1] != C.WDims[0])
    return emuError("a convolution whose channels do not match its filter");
  std::vector<double> Sum(size_t(product(C.YDims)), 0.0);
  std::vector<int64_t> O(FwdOut.size(), 0), In(FwdIn.size(), 0),
      Wi(C.WDims.size(), 0), R(Spatial, 0);
  do {
    int64_t K = O[1], Group = K / Kg;
    std::vector<int64_t> Win(C.WDims.begin() + 2, C.WDims.end());
    std::fill(R.begin(), R.end(), 0);
    do {
      bool Inside = true;
      for (size_t S = 0; S < Spatial; ++S) {
        int64_t H = O[2 + S] * C.Strides[S] - C.Pads[S] + R[S] * C.Dilations[S];
        Inside = Inside && H >= 0 && H < FwdIn[2 + S];
        In[2 + S] = H;
      }
      if (!Inside)
        continue;
      In[0] = O[0];
      for (int64_t Ci = 0; Ci < Cg; ++Ci) {
        In[1] = Group * Cg + Ci;
        Wi[0] = K;
        Wi[1] = Ci;
        for (size_t S = 0; S < Spatial; ++S)
          Wi[2 + S] = R[S];
        double Wv = load(C.Elem, W, offsetOf(C.WDims, Wi, C.Nhwc));
        if (!C.Transpose) {
          Sum[size_t(offsetOf(C.YDims, O, false))] +=
              load(C.Elem, X, offsetOf(C.XDims, In, C.Nhwc)) * Wv;
        } else {
          Sum[size_t(offsetOf(C.YDims, In, false))] +=
              load(C.Elem, X, offsetOf(C.XDims, O, C.Nhwc)) * Wv;
        }
      }
    } while (next(Win, R));
  } while (next(FwdOut, O));
  if (C.Graph)
    return runConvGraph(C, Sum, Where);
  const void *Bias = C.Fused ? Where(C.Bias) : nullptr;
  const void *Z = C.Fused && C.HasZ ? Where(C.Z) : nullptr;
  std::vector<int64_t> Idx(C.YDims.size(), 0);
  do {
    double V = Sum[size_t(offsetOf(C.YDims, Idx, false))];
    int64_t At = offsetOf(C.YDims, Idx, C.Nhwc);
    if (C.Fused) {
      if (Z)
        V += C.Alpha2 * load(C.Elem, Z, At);
      V += load(C.Elem, Bias, Idx[1]);
      if (C.Act == ConvConfig::Activation::Relu)
        V = V > 0 ? V : 0;
    }
    store(C.Elem, Y, At, V);
  } while (next(C.YDims, Idx));
  return llvm::Error::success();
}

llvm::Error runAttention(const AttentionConfig &C, Resolver Where) {
  if (!supported(C.Elem))
    return emuError("attention of an unsupported type");
  const void *Q = Where(C.Q), *K = Where(C.K), *V = Where(C.V);
  const void *Bias = C.HasBias ? Where(C.Bias) : nullptr;
  void *O = Where(C.O);
  int64_t Group = C.QHeads / C.KvHeads;
  std::vector<double> Score(size_t(C.KvLen)), Out(size_t(C.VHeadDim));
  auto At = [](const std::array<int64_t, 4> &S, int64_t B, int64_t H, int64_t I,
               int64_t D) { return B * S[0] + H * S[1] + I * S[2] + D * S[3]; };
  for (int64_t B = 0; B < C.Batch; ++B)
    for (int64_t H = 0; H < C.QHeads; ++H)
      for (int64_t I = 0; I < C.QLen; ++I) {
        int64_t Hk = H / Group;
        double Max = -INFINITY;
        for (int64_t J = 0; J < C.KvLen; ++J) {
          double Dot = 0;
          for (int64_t D = 0; D < C.HeadDim; ++D)
            Dot += load(C.Elem, Q, At(C.QStrides, B, H, I, D)) *
                   load(C.Elem, K, At(C.KStrides, B, Hk, J, D));
          double X = Dot * C.Scale;
          if (Bias) {
            int64_t Idx[4] = {B, H, I, J}, Off = 0;
            for (int A = 0; A < 4; ++A)
              Off += (C.BiasDims[A] == 1 ? 0 : Idx[A]) * C.BiasStrides[A];
            X += load(C.BiasElem, Bias, Off);
          }
          if (C.Causal && J > I)
            X = -INFINITY;
          Score[size_t(J)] = X;
          Max = std::max(Max, X);
        }
        // A row with no key left (every score -inf) gives zeros.
        double Sum = 0;
        for (double &X : Score)
          Sum += (X = Max == -INFINITY ? 0.0 : std::exp(X - Max));
        if (Sum == 0)
          Sum = 1;
        std::fill(Out.begin(), Out.end(), 0.0);
        for (int64_t J = 0; J < C.KvLen; ++J)
          for (int64_t D = 0; D < C.VHeadDim; ++D)
            Out[size_t(D)] += Score[size_t(J)] / Sum *
                              load(C.Elem, V, At(C.VStrides, B, Hk, J, D));
        for (int64_t D = 0; D < C.VHeadDim; ++D)
          store(C.Elem, O, At(C.OStrides, B, H, I, D), Out[size_t(D)]);
      }
  return llvm::Error::success();
}

} // namespace emu
} // namespace solder
