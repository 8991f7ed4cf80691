//===- TensorTest.cpp - Tensors viewing bytes they do not own -------------===//
#include "ir/Tensor.h"
#include "gtest/gtest.h"
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
