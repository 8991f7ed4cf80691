//===- ConvKernelsTest.cpp - Conv, MatMul, Gemm and pool kernels ----------===//
//
// Hand-checked small cases plus randomized comparisons against direct loops
// written here from the ONNX definitions (Conv and ConvTranspose over
// groups, dilations, strides, asymmetric pads, 1-D/2-D/3-D; batched
// broadcast MatMul).
//
//===----------------------------------------------------------------------===//
#include "NodeRunner.h"
#include "ir/OpKind.h"

using namespace solder;
using namespace solder::testing;

namespace {

struct ConvParams {
  std::vector<int64_t> XDims, WDims;
  int64_t Group;
  std::vector<int64_t> Strides, Dilations, Pads;
};

/// Decodes a flat index into a multi-index of Dims.
std::vector<int64_t> unflatten(int64_t I, llvm::ArrayRef<int64_t> Dims) {
  std::vector<int64_t> Idx(Dims.size());
  for (int D = int(Dims.size()) - 1; D >= 0; --D) {
    Idx[D] = I % Dims[D];
    I /= Dims[D];
  }
  return Idx;
}

int64_t flatten(llvm::ArrayRef<int64_t> Idx, llvm::ArrayRef<int64_t> Dims) {
  int64_t F = 0;
  for (size_t D = 0; D < Dims.size(); ++D)
    F = F * Dims[D] + Idx[D];
  return F;
}

/// Direct N-D convolution from the ONNX definition (explicit pads).
Tensor naiveConv(const Tensor &X, const Tensor &W, const Tensor *B,
                 const ConvParams &P) {
  size_t R = X.rank() - 2;
  int64_t N = X.dims()[0], C = X.dims()[1], M = W.dims()[0];
  int64_t Cg = C / P.Group, Mg = M / P.Group;
  std::vector<int64_t> YDims = {N, M};
  for (size_t I = 0; I < R; ++I) {
    int64_t EffK = (W.dims()[I + 2] - 1) * P.Dilations[I] + 1;
    YDims.push_back((X.dims()[I + 2] + P.Pads[I] + P.Pads[I + R] - EffK) /
                        P.Strides[I] +
                    1);
  }
  Tensor Y(DType::F32, YDims);
  std::vector<int64_t> KDims(W.dims().begin() + 2, W.dims().end());
  int64_t KSize = 1;
  for (int64_t K : KDims)
    KSize *= K;
  for (int64_t O = 0; O < Y.numElements(); ++O) {
    auto YI = unflatten(O, YDims);
    int64_t Gr = YI[1] / Mg;
    double Acc = B ? B->getDouble(YI[1]) : 0.0;
    for (int64_t Cl = 0; Cl < Cg; ++Cl)
      for (int64_t K = 0; K < KSize; ++K) {
        auto KI = unflatten(K, KDims);
        std::vector<int64_t> XI = {YI[0], Gr * Cg + Cl};
        bool Inside = true;
        for (size_t D = 0; D < R; ++D) {
          int64_t Pos =
              YI[D + 2] * P.Strides[D] - P.Pads[D] + KI[D] * P.Dilations[D];
          Inside &= Pos >= 0 && Pos < X.dims()[D + 2];
          XI.push_back(Pos);
        }
        if (!Inside)
          continue;
        std::vector<int64_t> WI = {YI[1], Cl};
        WI.insert(WI.end(), KI.begin(), KI.end());
        Acc += X.getDouble(flatten(XI, X.dims())) *
               W.getDouble(flatten(WI, W.dims()));
      }
    Y.setDouble(O, Acc);
  }
  return Y;
}

NodeRunner convRunner(const ConvParams &P) {
  NodeRunner R(OpKind::Conv);
  R.attr("group", P.Group)
      .attr("strides", P.Strides)
      .attr("dilations", P.Dilations)
      .attr("pads", P.Pads);
  return R;
}

TEST(ConvKernelsTest, HandCheckedConvWithBias) {
  Tensor X = floats({1, 1, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  Tensor W = floats({1, 1, 2, 2}, {1, 1, 1, 1});
  Tensor B = floats({1}, {0.5f});
  Tensor Y = NodeRunner(OpKind::Conv).runOk({&X, &W, &B});
  EXPECT_EQ(dimsOf(Y), (std::vector<int64_t>{1, 1, 2, 2}));
  EXPECT_EQ(toFloats(Y), (std::vector<float>{8.5f, 12.5f, 20.5f, 24.5f}));
}

TEST(ConvKernelsTest, RandomConvMatchesDirectLoops) {
  std::vector<ConvParams> Cases = {
      // 2-D, groups, dilation, stride, asymmetric pads.
      {{2, 4, 9, 8}, {6, 2, 3, 2}, 2, {2, 1}, {2, 1}, {1, 0, 2, 1}},
      // Depthwise with channel multiplier 2.
      {{1, 3, 7, 7}, {6, 1, 3, 3}, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      // 1x1 stride 1 unpadded (the direct gemm path).
      {{2, 5, 4, 3}, {7, 5, 1, 1}, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      // 1x1 with stride 2 (im2col path).
      {{1, 5, 5, 5}, {3, 5, 1, 1}, 1, {2, 2}, {1, 1}, {0, 0, 0, 0}},
      // 1-D with stride 3 and pads.
      {{2, 3, 11}, {4, 3, 4}, 1, {3}, {1}, {2, 1}},
      // 3-D with groups and dilation.
      {{1, 4, 5, 6, 7},
       {4, 2, 2, 3, 2},
       2,
       {1, 2, 1},
       {2, 1, 3},
       {1, 0, 0, 1, 1, 2}},
  };
  unsigned Seed = 1;
  for (const ConvParams &P : Cases) {
    Tensor X = randomFloats(P.XDims, Seed++), W = randomFloats(P.WDims, Seed++);
    Tensor B = randomFloats({P.WDims[0]}, Seed++);
    Tensor Want = naiveConv(X, W, &B, P);
    Tensor Got = convRunner(P).runOk({&X, &W, &B});
    expectNear(Got, Want, 1e-4);
    Tensor WantNoBias = naiveConv(X, W, nullptr, P);
    expectNear(convRunner(P).runOk({&X, &W, nullptr}), WantNoBias, 1e-4);
  }
}

TEST(ConvKernelsTest, AutoPadSameUpperAndLower) {
  Tensor X = randomFloats({1, 2, 6, 5}, 11), W = randomFloats({3, 2, 3, 2}, 12);
  // in 6, k 3, s 2 -> out 3, total pad 1; in 5, k 2, s 2 -> out 3, pad 1.
  ConvParams Upper{{}, {}, 1, {2, 2}, {1, 1}, {0, 0, 1, 1}};
  ConvParams Lower{{}, {}, 1, {2, 2}, {1, 1}, {1, 1, 0, 0}};
  for (auto [Mode, P] : {std::make_pair("SAME_UPPER", Upper),
                         std::make_pair("SAME_LOWER", Lower)}) {
    NodeRunner R(OpKind::Conv);
    R.attr("auto_pad", Mode).attr("strides", std::vector<int64_t>{2, 2});
    Tensor Got = R.runOk({&X, &W});
    expectNear(Got, naiveConv(X, W, nullptr, P), 1e-4);
  }
  NodeRunner Valid(OpKind::Conv);
  Valid.attr("auto_pad", "VALID")
      .attr("pads", std::vector<int64_t>{5, 5, 5, 5});
  ConvParams V{{}, {}, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}};
  expectNear(Valid.runOk({&X, &W}), naiveConv(X, W, nullptr, V), 1e-4);
}

TEST(ConvKernelsTest, HalfConvRoundsF32Result) {
  Tensor X = randomFloats({1, 2, 4, 4}, 21), W = randomFloats({2, 2, 3, 3}, 22);
  Tensor XH(DType::F16, X.dims()), WH(DType::F16, W.dims());
  for (int64_t I = 0; I < X.numElements(); ++I)
    XH.setDouble(I, X.getDouble(I));
  for (int64_t I = 0; I < W.numElements(); ++I)
    WH.setDouble(I, W.getDouble(I));
  Tensor Y = NodeRunner(OpKind::Conv).runOk({&XH, &WH});
  ASSERT_EQ(Y.dtype(), DType::F16);
  ConvParams P{{}, {}, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}};
  expectNear(Y, naiveConv(XH, WH, nullptr, P), 1e-2);
}

TEST(ConvKernelsTest, ConvErrorsNameTheNode) {
  Tensor X = randomFloats({1, 3, 4, 4}, 1), W = randomFloats({2, 2, 3, 3}, 2);
  NodeRunner(OpKind::Conv).expectError({&X, &W}, "Conv node 'n'");
  Tensor I = Tensor(DType::I32, {1, 2, 4, 4}),
         WI = Tensor(DType::I32, {2, 2, 3, 3});
  NodeRunner(OpKind::Conv).expectError({&I, &WI}, "unsupported element type");
}

/// Direct transposed convolution: scatter each input element.
Tensor naiveConvTranspose(const Tensor &X, const Tensor &W,
                          llvm::ArrayRef<int64_t> YSpatial, int64_t Group,
                          llvm::ArrayRef<int64_t> S, llvm::ArrayRef<int64_t> D,
                          llvm::ArrayRef<int64_t> PadBegin) {
  size_t R = X.rank() - 2;
  int64_t N = X.dims()[0], C = X.dims()[1], Mg = W.dims()[1];
  int64_t Cg = C / Group;
  std::vector<int64_t> YDims = {N, Mg * Group};
  YDims.insert(YDims.end(), YSpatial.begin(), YSpatial.end());
  Tensor Y(DType::F32, YDims);
  std::vector<double> Acc(Y.numElements(), 0.0);
  std::vector<int64_t> KDims(W.dims().begin() + 2, W.dims().end());
  int64_t KSize = 1;
  for (int64_t K : KDims)
    KSize *= K;
  for (int64_t I = 0; I < X.numElements(); ++I) {
    auto XI = unflatten(I, X.dims());
    int64_t Gr = XI[1] / Cg;
    for (int64_t M = 0; M < Mg; ++M)
      for (int64_t K = 0; K < KSize; ++K) {
        auto KI = unflatten(K, KDims);
        std::vector<int64_t> YI = {XI[0], Gr * Mg + M};
        bool Inside = true;
        for (size_t Dm = 0; Dm < R; ++Dm) {
          int64_t Pos = XI[Dm + 2] * S[Dm] - PadBegin[Dm] + KI[Dm] * D[Dm];
          Inside &= Pos >= 0 && Pos < YSpatial[Dm];
          YI.push_back(Pos);
        }
        if (!Inside)
          continue;
        std::vector<int64_t> WI = {XI[1], M};
        WI.insert(WI.end(), KI.begin(), KI.end());
        Acc[flatten(YI, YDims)] +=
            X.getDouble(I) * W.getDouble(flatten(WI, W.dims()));
      }
  }
  for (int64_t I = 0; I < Y.numElements(); ++I)
    Y.setDouble(I, Acc[I]);
  return Y;
}

TEST(ConvKernelsTest, HandCheckedConvTranspose1D) {
  Tensor X = floats({1, 1, 3}, {0, 1, 2});
  Tensor W = floats({1, 2, 3}, {1, 1, 1, 1, 1, 1});
  Tensor Y = NodeRunner(OpKind::ConvTranspose).runOk({&X, &W});
  EXPECT_EQ(dimsOf(Y), (std::vector<int64_t>{1, 2, 5}));
  EXPECT_EQ(toFloats(Y), (std::vector<float>{0, 1, 3, 3, 2, 0, 1, 3, 3, 2}));
}

TEST(ConvKernelsTest, RandomConvTransposeMatchesDirectLoops) {
  // 2-D, 2 groups, stride (2,3), dilation (1,2), pads, output_padding.
  Tensor X = randomFloats({2, 4, 3, 4}, 31), W = randomFloats({4, 3, 3, 2}, 32);
  NodeRunner R(OpKind::ConvTranspose);
  R.attr("group", int64_t(2))
      .attr("strides", std::vector<int64_t>{2, 3})
      .attr("dilations", std::vector<int64_t>{1, 2})
      .attr("pads", std::vector<int64_t>{1, 0, 0, 2})
      .attr("output_padding", std::vector<int64_t>{1, 1});
  Tensor Y = R.runOk({&X, &W});
  // out = s*(in-1) + op + (k-1)*d+1 - pb - pe
  std::vector<int64_t> YS = {2 * 2 + 1 + 3 - 1, 3 * 3 + 1 + 3 - 2};
  expectNear(Y, naiveConvTranspose(X, W, YS, 2, {2, 3}, {1, 2}, {1, 0}), 1e-4);

  // output_shape derives the pads from the total 2*(3-1) + 3 - 6 = 1.
  Tensor X1 = randomFloats({1, 2, 3}, 33), W1 = randomFloats({2, 2, 3}, 34);
  NodeRunner R1(OpKind::ConvTranspose);
  R1.attr("strides", std::vector<int64_t>{2})
      .attr("output_shape", std::vector<int64_t>{6});
  // total = 2*2 + 3 - 6 = 1 -> begin 1 - 0 = 1 (NOTSET puts the extra first).
  expectNear(R1.runOk({&X1, &W1}),
             naiveConvTranspose(X1, W1, {6}, 1, {2}, {1}, {1}), 1e-4);
  NodeRunner R2(OpKind::ConvTranspose);
  R2.attr("strides", std::vector<int64_t>{2}).attr("auto_pad", "SAME_UPPER");
  // out = 6, total = 1 -> begin 0.
  expectNear(R2.runOk({&X1, &W1}),
             naiveConvTranspose(X1, W1, {6}, 1, {2}, {1}, {0}), 1e-4);
}

Tensor naiveMatMul(const Tensor &A, const Tensor &B) {
  // A: [Batch, M, K] or [M, K] broadcast against B likewise (rank <= 3).
  int64_t M = A.dims()[A.rank() - 2], K = A.dims().back(), N = B.dims().back();
  int64_t BA = A.rank() == 3 ? A.dims()[0] : 1,
          BB = B.rank() == 3 ? B.dims()[0] : 1;
  int64_t Batch = std::max(BA, BB);
  Tensor Y(DType::F32, {Batch, M, N});
  for (int64_t Bt = 0; Bt < Batch; ++Bt)
    for (int64_t I = 0; I < M; ++I)
      for (int64_t J = 0; J < N; ++J) {
        double Acc = 0;
        for (int64_t L = 0; L < K; ++L)
          Acc += A.getDouble(((BA == 1 ? 0 : Bt) * M + I) * K + L) *
                 B.getDouble(((BB == 1 ? 0 : Bt) * K + L) * N + J);
        Y.setDouble((Bt * M + I) * N + J, Acc);
      }
  return Y;
}

TEST(MatMulKernelsTest, HandCheckedAndVectorOperands) {
  Tensor A = floats({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor B = floats({3, 2}, {1, 0, 0, 1, 1, 1});
  Tensor Y = NodeRunner(OpKind::MatMul).runOk({&A, &B});
  EXPECT_EQ(toFloats(Y), (std::vector<float>{4, 5, 10, 11}));
  Tensor V = floats({3}, {1, 1, 1});
  Tensor YV = NodeRunner(OpKind::MatMul).runOk({&V, &B});
  EXPECT_EQ(dimsOf(YV), (std::vector<int64_t>{2}));
  EXPECT_EQ(toFloats(YV), (std::vector<float>{2, 2}));
  Tensor YW = NodeRunner(OpKind::MatMul).runOk({&A, &V});
  EXPECT_EQ(dimsOf(YW), (std::vector<int64_t>{2}));
  EXPECT_EQ(toFloats(YW), (std::vector<float>{6, 15}));
  Tensor Bad = floats({2, 2}, {1, 2, 3, 4});
  NodeRunner(OpKind::MatMul).expectError({&A, &Bad}, "inner dims differ");
}

TEST(MatMulKernelsTest, BroadcastBatches) {
  Tensor A = randomFloats({4, 3, 5}, 41), B = randomFloats({5, 2}, 42);
  Tensor Y = NodeRunner(OpKind::MatMul).runOk({&A, &B});
  expectNear(Y, naiveMatMul(A, B), 1e-5);
  Tensor A2 = randomFloats({3, 5}, 43), B2 = randomFloats({4, 5, 2}, 44);
  expectNear(NodeRunner(OpKind::MatMul).runOk({&A2, &B2}), naiveMatMul(A2, B2),
             1e-5);
  Tensor A3 = randomFloats({1, 3, 5}, 45), B3 = randomFloats({4, 5, 2}, 46);
  expectNear(NodeRunner(OpKind::MatMul).runOk({&A3, &B3}), naiveMatMul(A3, B3),
             1e-5);
  // [2,1,3,5] x [4,5,2] -> [2,4,3,2]
  Tensor A4 = randomFloats({2, 1, 3, 5}, 47);
  Tensor Y4 = NodeRunner(OpKind::MatMul).runOk({&A4, &B2});
  EXPECT_EQ(dimsOf(Y4), (std::vector<int64_t>{2, 4, 3, 2}));
  // Batch (1, 2) of Y4 is A4[1] x B2[2].
  for (int64_t I = 0; I < 3; ++I)
    for (int64_t J = 0; J < 2; ++J) {
      double Acc = 0;
      for (int64_t L = 0; L < 5; ++L)
        Acc += A4.getDouble(15 + I * 5 + L) * B2.getDouble(20 + L * 2 + J);
      EXPECT_NEAR(Y4.getDouble(((1 * 4 + 2) * 3 + I) * 2 + J), Acc, 1e-5);
    }
}

TEST(MatMulKernelsTest, IntegerAndDouble) {
  Tensor A(DType::I32, {2, 2}), B(DType::I32, {2, 2});
  for (int I = 0; I < 4; ++I) {
    A.setDouble(I, I + 1);
    B.setDouble(I, 10 * (I + 1));
  }
  Tensor Y = NodeRunner(OpKind::MatMul).runOk({&A, &B});
  ASSERT_EQ(Y.dtype(), DType::I32);
  EXPECT_EQ(toInts(Y), (std::vector<int64_t>{70, 100, 150, 220}));
  Tensor AD(DType::F64, {2, 2}), BD(DType::F64, {2, 2});
  for (int I = 0; I < 4; ++I) {
    AD.setDouble(I, I + 1);
    BD.setDouble(I, 10 * (I + 1));
  }
  EXPECT_EQ(toFloats(NodeRunner(OpKind::MatMul).runOk({&AD, &BD})),
            (std::vector<float>{70, 100, 150, 220}));
}

TEST(GemmKernelsTest, TransposesAlphaBetaAndBroadcastC) {
  // A^T is [[1,2,3],[4,5,6]] stored as 3x2; B^T is identity-ish 2x3.
  Tensor A = floats({3, 2}, {1, 4, 2, 5, 3, 6});
  Tensor B = floats({2, 3}, {1, 0, 1, 0, 1, 1});
  Tensor C = floats({2}, {100, 200});
  NodeRunner R(OpKind::Gemm);
  R.attr("transA", int64_t(1))
      .attr("transB", int64_t(1))
      .attr("alpha", 2.0f)
      .attr("beta", 0.5f);
  // A'B' = [[1+3, 2+3],[4+6, 5+6]] = [[4,5],[10,11]]
  Tensor Y = R.runOk({&A, &B, &C});
  EXPECT_EQ(toFloats(Y), (std::vector<float>{58, 110, 70, 122}));
  Tensor CCol = floats({2, 1}, {1, 2});
  EXPECT_EQ(toFloats(R.runOk({&A, &B, &CCol})),
            (std::vector<float>{8.5f, 10.5f, 21, 23}));
  EXPECT_EQ(toFloats(R.runOk({&A, &B, nullptr})),
            (std::vector<float>{8, 10, 20, 22}));
  Tensor Scalar = floats({}, {10});
  EXPECT_EQ(toFloats(NodeRunner(OpKind::Gemm)
                         .attr("transA", int64_t(1))
                         .attr("transB", int64_t(1))
                         .runOk({&A, &B, &Scalar})),
            (std::vector<float>{14, 15, 20, 21}));
}

TEST(PoolKernelsTest, MaxPoolWithIndicesAndStorageOrder) {
  Tensor X = floats({1, 1, 4, 4},
                    {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  NodeRunner R(OpKind::MaxPool, 2);
  R.attr("kernel_shape", std::vector<int64_t>{2, 2})
      .attr("strides", std::vector<int64_t>{2, 2});
  auto Out = R.run({&X});
  ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
  EXPECT_EQ(toFloats((*Out)[0]), (std::vector<float>{6, 8, 14, 16}));
  EXPECT_EQ(toInts((*Out)[1]), (std::vector<int64_t>{5, 7, 13, 15}));
  R.attr("storage_order", int64_t(1));
  auto Col = R.run({&X});
  ASSERT_TRUE(bool(Col)) << llvm::toString(Col.takeError());
  // Column-major index of (h, w) is h + w * 4.
  EXPECT_EQ(toInts((*Col)[1]), (std::vector<int64_t>{5, 13, 7, 15}));
}

TEST(PoolKernelsTest, MaxPoolPadsCeilDilation) {
  Tensor X = floats({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  NodeRunner Pad(OpKind::MaxPool);
  Pad.attr("kernel_shape", std::vector<int64_t>{2, 2})
      .attr("pads", std::vector<int64_t>{1, 1, 0, 0});
  EXPECT_EQ(toFloats(Pad.runOk({&X})),
            (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  NodeRunner Ceil(OpKind::MaxPool);
  Ceil.attr("kernel_shape", std::vector<int64_t>{2, 2})
      .attr("strides", std::vector<int64_t>{2, 2})
      .attr("ceil_mode", int64_t(1));
  Tensor YC = Ceil.runOk({&X});
  EXPECT_EQ(dimsOf(YC), (std::vector<int64_t>{1, 1, 2, 2}));
  EXPECT_EQ(toFloats(YC), (std::vector<float>{5, 6, 8, 9}));
  NodeRunner Dil(OpKind::MaxPool);
  Dil.attr("kernel_shape", std::vector<int64_t>{2, 2})
      .attr("dilations", std::vector<int64_t>{2, 2});
  EXPECT_EQ(toFloats(Dil.runOk({&X})), (std::vector<float>{9}));
  Tensor U(DType::U8, {1, 1, 2, 2});
  for (int I = 0; I < 4; ++I)
    U.setDouble(I, 250 - I);
  NodeRunner(OpKind::MaxPool)
      .attr("kernel_shape", std::vector<int64_t>{2, 2})
      .runOk({&U});
  EXPECT_EQ(toInts(NodeRunner(OpKind::MaxPool)
                       .attr("kernel_shape", std::vector<int64_t>{2, 2})
                       .runOk({&U})),
            (std::vector<int64_t>{250}));
}

TEST(PoolKernelsTest, AveragePoolCountIncludePad) {
  Tensor X = floats({1, 1, 2, 2}, {1, 2, 3, 4});
  NodeRunner R(OpKind::AveragePool);
  R.attr("kernel_shape", std::vector<int64_t>{2, 2})
      .attr("pads", std::vector<int64_t>{1, 1, 0, 0});
  // Windows: {1}, {1,2}, {1,3}, {1,2,3,4}.
  EXPECT_EQ(toFloats(R.runOk({&X})), (std::vector<float>{1, 1.5f, 2, 2.5f}));
  R.attr("count_include_pad", int64_t(1));
  EXPECT_EQ(toFloats(R.runOk({&X})),
            (std::vector<float>{0.25f, 0.75f, 1, 2.5f}));
  Tensor X1 = floats({1, 1, 5}, {1, 2, 3, 4, 5});
  NodeRunner S(OpKind::AveragePool);
  S.attr("kernel_shape", std::vector<int64_t>{3})
      .attr("strides", std::vector<int64_t>{2})
      .attr("auto_pad", "SAME_UPPER");
  // out 3, total pad 2 -> windows [-1..1], [1..3], [3..5].
  EXPECT_EQ(toFloats(S.runOk({&X1})), (std::vector<float>{1.5f, 3, 4.5f}));
}

TEST(PoolKernelsTest, GlobalPoolsAndLRN) {
  Tensor X = floats({1, 2, 2, 2}, {1, 2, 3, 6, -1, -2, -3, -4});
  Tensor A = NodeRunner(OpKind::GlobalAveragePool).runOk({&X});
  EXPECT_EQ(dimsOf(A), (std::vector<int64_t>{1, 2, 1, 1}));
  EXPECT_EQ(toFloats(A), (std::vector<float>{3, -2.5f}));
  EXPECT_EQ(toFloats(NodeRunner(OpKind::GlobalMaxPool).runOk({&X})),
            (std::vector<float>{6, -1}));

  Tensor L = floats({1, 3, 1, 1}, {1, 2, 3});
  NodeRunner R(OpKind::LRN);
  R.attr("size", int64_t(2))
      .attr("alpha", 0.5f)
      .attr("beta", 1.0f)
      .attr("bias", 2.0f);
  // size 2: channel c sums c and c+1.
  Tensor Y = R.runOk({&L});
  std::vector<float> Got = toFloats(Y);
  float Want[3] = {1 / (2 + 0.25f * 5), 2 / (2 + 0.25f * 13),
                   3 / (2 + 0.25f * 9)};
  for (int I = 0; I < 3; ++I)
    EXPECT_NEAR(Got[I], Want[I], 1e-6);
}

} // namespace
