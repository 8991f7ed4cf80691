//===- TensorTest.cpp - Tensors viewing bytes they do not own -------------===//
#include "ir/Tensor.h"
#include "gtest/gtest.h"
#include <algorithm>
#include <cstring>

using namespace solder;

namespace {

/// Four floats at a given byte offset of an owned buffer.
std::shared_ptr<std::string> floatsAt(size_t Offset) {
  auto Buf = std::make_shared<std::string>(Offset + 16, '\0');
  float V[4] = {1.5f, -2.0f, 3.25f, 4.0f};
  std::memcpy(&(*Buf)[Offset], V, sizeof(V));
  return Buf;
}

TEST(TensorTest, AlignedViewSharesTheBytes) {
  auto Buf = floatsAt(4);
  Tensor T = Tensor::view(DType::F32, {2, 2}, Buf->data() + 4, Buf);
  EXPECT_EQ(T.rawData(), Buf->data() + 4);
  EXPECT_EQ(T.bytes().data(), Buf->data() + 4);
  EXPECT_EQ(T.getDouble(2), 3.25);
}

TEST(TensorTest, MisalignedViewCopiesOnlyOnTypedAccess) {
  auto Buf = floatsAt(1);
  Tensor T = Tensor::view(DType::F32, {4}, Buf->data() + 1, Buf);
  // Moving the bytes needs no copy...
  EXPECT_EQ(T.bytes().data(), Buf->data() + 1);
  EXPECT_EQ(T.bytes().size(), 16u);
  // ...typed access gets an aligned copy, made once and shared by copies.
  const void *P = T.rawData();
  EXPECT_NE(P, static_cast<const void *>(Buf->data() + 1));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(P) % alignof(float), 0u);
  Tensor Copy = T.reshaped({2, 2});
  EXPECT_EQ(Copy.rawData(), P);
  EXPECT_EQ(T.getDouble(0), 1.5);
  EXPECT_EQ(Copy.getDouble(3), 4.0);
  EXPECT_TRUE(T.bitwiseEqual(Tensor::fromFloats({1.5f, -2, 3.25f, 4}, {4})));
  // The view keeps its owner alive.
  std::weak_ptr<std::string> Weak = Buf;
  Buf.reset();
  EXPECT_FALSE(Weak.expired());
  EXPECT_EQ(T.bytes()[0], Tensor::fromFloats({1.5f}, {1}).bytes()[0]);
}

} // namespace

TEST(TensorTest, TransposedMovesEveryElementSizeAndRank) {
  // Every element size (bool, f16, f32, i64), ranks 0 to 4, every
  // permutation of them, dims of 1 included: each result element is the
  // source element its index maps back to (checked by index arithmetic,
  // not by the kernel under test). Twin: the identity permutation copies.
  for (DType T : {DType::Bool, DType::F16, DType::F32, DType::I64}) {
    for (std::vector<int64_t> Dims :
         {std::vector<int64_t>{}, {5}, {3, 4}, {2, 1, 3}, {2, 3, 1, 4}}) {
      Tensor A(T, Dims);
      size_t Size = dtypeSize(T);
      auto *Bytes = static_cast<unsigned char *>(A.mutableRawData());
      for (size_t I = 0; I < A.byteSize(); ++I)
        Bytes[I] = static_cast<unsigned char>(I * 37 + 11);
      std::vector<int64_t> Perm(Dims.size());
      for (size_t I = 0; I < Perm.size(); ++I)
        Perm[I] = int64_t(I);
      do {
        Tensor B = A.transposed(Perm);
        ASSERT_EQ(B.numElements(), A.numElements());
        std::vector<int64_t> Idx(Dims.size(), 0);
        for (int64_t Out = 0; Out < B.numElements(); ++Out) {
          // Out's index in B, then the source offset in A.
          int64_t Rest = Out, Offset = 0, Stride = 1;
          for (size_t D = Dims.size(); D-- > 0;) {
            Idx[D] = Rest % B.dims()[D];
            Rest /= B.dims()[D];
          }
          std::vector<int64_t> SrcIdx(Dims.size());
          for (size_t D = 0; D < Dims.size(); ++D)
            SrcIdx[Perm[D]] = Idx[D];
          for (size_t D = Dims.size(); D-- > 0;) {
            Offset += SrcIdx[D] * Stride;
            Stride *= Dims[D];
          }
          ASSERT_EQ(
              std::memcmp(static_cast<const char *>(B.rawData()) + Out * Size,
                          Bytes + Offset * Size, Size),
              0)
              << dtypeName(T).str() << " rank " << Dims.size() << " element "
              << Out;
        }
      } while (std::next_permutation(Perm.begin(), Perm.end()));
    }
  }
}

TEST(TensorTest, TransposedPermutesLikeOnnxTranspose) {
  // [2,3] -> perm [1,0] -> [3,2]; [1,2,2,3] NCHW -> NHWC.
  Tensor A = Tensor::fromFloats({0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor T = A.transposed({1, 0});
  ASSERT_EQ(T.dims(), llvm::ArrayRef<int64_t>({3, 2}));
  const float Want[] = {0, 3, 1, 4, 2, 5};
  for (int I = 0; I < 6; ++I)
    EXPECT_EQ(T.data<float>()[I], Want[I]) << I;
  std::vector<float> V(12);
  for (int I = 0; I < 12; ++I)
    V[I] = float(I);
  Tensor X = Tensor::fromFloats(V, {1, 2, 2, 3});
  Tensor Y = X.transposed({0, 2, 3, 1});
  ASSERT_EQ(Y.dims(), llvm::ArrayRef<int64_t>({1, 2, 3, 2}));
  // Y[0,h,w,c] = X[0,c,h,w] = c*6 + h*3 + w.
  for (int H = 0; H < 2; ++H)
    for (int W = 0; W < 3; ++W)
      for (int C = 0; C < 2; ++C)
        EXPECT_EQ(Y.data<float>()[(H * 3 + W) * 2 + C],
                  float(C * 6 + H * 3 + W));
  // And back: the inverse perm restores X.
  EXPECT_TRUE(Y.transposed({0, 3, 1, 2}).bitwiseEqual(X));
}

TEST(TensorTest, ArenaTensorsAreAlignedApartAndOutliveTheArena) {
  // Tensors of one arena: 64-byte aligned, never overlapping (one larger
  // than a block gets its own), the padding to their 64-byte line zeroed,
  // and alive, with what was written, after the arena is gone.
  std::vector<Tensor> Ts;
  {
    TensorArena A;
    for (int64_t N : {int64_t(3), int64_t(1000), int64_t(5) << 20, int64_t(7),
                      int64_t(33)}) {
      Tensor T = A.uninitialized(DType::F16, {N});
      std::memset(T.mutableRawData(), int(Ts.size() + 1), T.byteSize());
      Ts.push_back(std::move(T));
    }
  }
  std::vector<std::pair<const char *, const char *>> Spans;
  for (size_t I = 0; I < Ts.size(); ++I) {
    const char *P = static_cast<const char *>(Ts[I].rawData());
    size_t Bytes = Ts[I].byteSize();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(P) % 64, 0u) << I;
    EXPECT_EQ(std::count(P, P + Bytes, char(I + 1)), int64_t(Bytes)) << I;
    size_t Lines = (Bytes + 63) / 64 * 64;
    EXPECT_EQ(std::count(P + Bytes, P + Lines, '\0'), int64_t(Lines - Bytes))
        << I;
    Spans.push_back({P, P + Lines});
  }
  std::sort(Spans.begin(), Spans.end());
  for (size_t I = 1; I < Spans.size(); ++I)
    EXPECT_LE(Spans[I - 1].second, Spans[I].first) << "overlap";
}

TEST(TensorTest, TransposedIntoAnArenaEqualsTheOwnStorageOne) {
  // The same permutation with and without an arena: the same tensor.
  Tensor W(DType::F32, {4, 3, 2, 5});
  float *P = W.mutableData<float>();
  for (int64_t I = 0; I < W.numElements(); ++I)
    P[I] = float(I) * 0.5f - 7.0f;
  TensorArena A;
  const int64_t Perm[] = {0, 2, 3, 1};
  Tensor Own = W.transposed(Perm), InArena = W.transposed(Perm, &A);
  EXPECT_TRUE(Own.bitwiseEqual(InArena));
  EXPECT_NE(Own.rawData(), InArena.rawData());
  // Negative twin: another permutation differs.
  const int64_t Other[] = {0, 3, 1, 2};
  EXPECT_FALSE(W.transposed(Other, &A).bitwiseEqual(Own));
}
