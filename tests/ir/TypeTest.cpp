//===- TypeTest.cpp - DType conversions and shape broadcasting
//-------------===//
//
// Checks the f16/bf16 <-> float conversions (exhaustively for the 16-bit
// side, round-to-nearest-even at ties, overflow, subnormals, NaN) and
// numpy broadcasting of static, symbolic and unknown dims.
//
//===----------------------------------------------------------------------===//
#include "ir/Type.h"
#include "ir/DType.h"
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>

using namespace solder;

namespace {

float bitsToFloat(uint32_t U) {
  float F;
  std::memcpy(&F, &U, 4);
  return F;
}

uint32_t floatToBits(float F) {
  uint32_t U;
  std::memcpy(&U, &F, 4);
  return U;
}

TEST(DTypeTest, NamesRoundTrip) {
  for (int I = int(DType::F32); I <= int(DType::Bool); ++I) {
    DType T = DType(I);
    auto P = parseDType(dtypeName(T));
    ASSERT_TRUE(P.has_value()) << dtypeName(T).str();
    EXPECT_EQ(*P, T);
  }
  EXPECT_FALSE(parseDType("f33").has_value());
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::Bool), 1u);
  EXPECT_EQ(dtypeSize(DType::U64), 8u);
}

TEST(DTypeTest, HalfKnownValues) {
  EXPECT_EQ(halfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(halfToFloat(0xc000), -2.0f);
  EXPECT_EQ(halfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24)); // smallest subnormal
  EXPECT_EQ(halfToFloat(0x0400), std::ldexp(1.0f, -14)); // smallest normal
  EXPECT_EQ(floatToBits(halfToFloat(0x8000)), 0x80000000u);
  EXPECT_TRUE(std::isinf(halfToFloat(0x7c00)));
  EXPECT_TRUE(std::isinf(halfToFloat(0xfc00)) && halfToFloat(0xfc00) < 0);
  EXPECT_TRUE(std::isnan(halfToFloat(0x7e00)));
  EXPECT_TRUE(std::isnan(halfToFloat(0x7c01)));

  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff); // below the rounding midpoint
  EXPECT_EQ(floatToHalf(65520.0f),
            0x7c00); // a tie: the even neighbour is infinity
  EXPECT_EQ(floatToHalf(1e10f), 0x7c00);
  EXPECT_EQ(floatToHalf(-1e10f), 0xfc00);
  EXPECT_EQ(floatToHalf(INFINITY), 0x7c00);
  uint16_t N = floatToHalf(NAN);
  EXPECT_EQ(N & 0x7c00, 0x7c00);
  EXPECT_NE(N & 0x03ff, 0) << "NaN must stay NaN";
}

TEST(DTypeTest, InlineHalfConversionEqualsTheFullOne) {
  // The inline fast path against the full conversion: every exponent, with
  // mantissas around the rounding points and random ones, both signs; and
  // its negative twin: values outside the fast range go to the full one.
  uint32_t State = 12345;
  for (uint32_t Exp = 0; Exp < 256; ++Exp)
    for (uint32_t K = 0; K < 4096; ++K) {
      State = State * 1664525u + 1013904223u;
      uint32_t Mant =
          K < 16 ? (0x1000u * K + (K & 1)) & 0x7fffffu : State & 0x7fffffu;
      for (uint32_t Sign : {0u, 0x80000000u}) {
        uint32_t Bits = Sign | Exp << 23 | Mant;
        float F;
        std::memcpy(&F, &Bits, 4);
        uint16_t Fast = floatToHalf(F), Full = floatToHalfSlow(F);
        if (std::isnan(F)) {
          ASSERT_EQ(Fast & 0x7c00, 0x7c00);
          ASSERT_NE(Fast & 0x3ff, 0);
        } else {
          ASSERT_EQ(Fast, Full) << std::hex << Bits;
        }
      }
    }
}

TEST(DTypeTest, HalfRoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 (even mantissa) and 1 + 2^-10.
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3*2^-11 is halfway between 0x3c01 (odd) and 0x3c02 (even).
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // Just above a midpoint rounds up.
  EXPECT_EQ(floatToHalf(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)),
            0x3c01);
  // Subnormal ties: 2^-25 is halfway between 0 and the smallest subnormal.
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(floatToHalf(3 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -26)), 0x0000); // underflow to 0
  // The largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -26)), 0x0400);
}

TEST(DTypeTest, HalfRoundTripsExhaustively) {
  for (uint32_t H = 0; H <= 0xffff; ++H) {
    float F = halfToFloat(uint16_t(H));
    bool IsNaN = (H & 0x7c00) == 0x7c00 && (H & 0x03ff);
    if (IsNaN) {
      EXPECT_TRUE(std::isnan(F)) << H;
      uint16_t Back = floatToHalf(F);
      EXPECT_TRUE((Back & 0x7c00) == 0x7c00 && (Back & 0x03ff)) << H;
      continue;
    }
    EXPECT_EQ(floatToHalf(F), H) << "half 0x" << std::hex << H;
  }
}

TEST(DTypeTest, BF16KnownValuesAndRounding) {
  EXPECT_EQ(floatToBF16(1.0f), 0x3f80);
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(bf16ToFloat(0xc000), -2.0f);
  EXPECT_EQ(floatToBF16(-0.0f), 0x8000);
  // Ties go to even: 0x3f808000 -> 0x3f80, 0x3f818000 -> 0x3f82.
  EXPECT_EQ(floatToBF16(bitsToFloat(0x3f808000)), 0x3f80);
  EXPECT_EQ(floatToBF16(bitsToFloat(0x3f818000)), 0x3f82);
  EXPECT_EQ(floatToBF16(bitsToFloat(0x3f808001)), 0x3f81);
  EXPECT_EQ(floatToBF16(bitsToFloat(0x3f807fff)), 0x3f80);
  // The largest float rounds to infinity.
  EXPECT_EQ(floatToBF16(bitsToFloat(0x7f7fffff)), 0x7f80);
  EXPECT_EQ(floatToBF16(INFINITY), 0x7f80);
  // A NaN whose payload is only in the low bits must not become infinity.
  uint16_t N = floatToBF16(bitsToFloat(0x7f800001));
  EXPECT_TRUE(std::isnan(bf16ToFloat(N))) << std::hex << N;
  N = floatToBF16(bitsToFloat(0xffffffff));
  EXPECT_TRUE(std::isnan(bf16ToFloat(N))) << std::hex << N;
}

TEST(DTypeTest, BF16RoundTripsExhaustively) {
  for (uint32_t B = 0; B <= 0xffff; ++B) {
    float F = bf16ToFloat(uint16_t(B));
    if (std::isnan(F)) {
      EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBF16(F)))) << B;
      continue;
    }
    EXPECT_EQ(floatToBF16(F), B) << "bf16 0x" << std::hex << B;
  }
}

Shape dims(std::initializer_list<const char *> Ds) {
  Shape S;
  for (const char *D : Ds) {
    if (std::string(D) == "?")
      S.push_back(Dim::unknown());
    else if (D[0] >= '0' && D[0] <= '9')
      S.push_back(Dim(std::atoll(D)));
    else
      S.push_back(Dim::symbol(D));
  }
  return S;
}

std::string broadcast(const Shape &A, const Shape &B) {
  Shape Out;
  std::string Err;
  if (!broadcastShapes(A, B, Out, Err))
    return "error: " + Err;
  return typeToString(TensorType(DType::F32, Out));
}

TEST(TypeTest, PrintType) {
  EXPECT_EQ(typeToString(TensorType(DType::F32, dims({"N", "3", "?"}))),
            "f32[N,3,?]");
  EXPECT_EQ(typeToString(TensorType(DType::I64, Shape())), "i64[]");
  TensorType T(DType::F16, llvm::ArrayRef<int64_t>{2, 3});
  EXPECT_TRUE(T.isStatic());
  EXPECT_EQ(T.numElements(), 6);
  EXPECT_FALSE(TensorType(DType::F32, dims({"N"})).isStatic());
}

TEST(TypeTest, BroadcastStatic) {
  EXPECT_EQ(broadcast(dims({"2", "3"}), dims({"3"})), "f32[2,3]");
  EXPECT_EQ(broadcast(dims({"2", "1"}), dims({"1", "3"})), "f32[2,3]");
  EXPECT_EQ(broadcast(dims({}), dims({"2", "3"})), "f32[2,3]");
  EXPECT_EQ(broadcast(dims({"4", "1", "5"}), dims({"3", "1"})), "f32[4,3,5]");
  EXPECT_EQ(broadcast(dims({"0"}), dims({"1"})), "f32[0]");
  EXPECT_EQ(broadcast(dims({"2", "3"}), dims({"4", "3"})),
            "error: cannot broadcast dims 2 and 4");
  EXPECT_EQ(broadcast(dims({"3"}), dims({"0"})),
            "error: cannot broadcast dims 3 and 0");
}

TEST(TypeTest, BroadcastSymbolicAndUnknown) {
  EXPECT_EQ(broadcast(dims({"N", "3"}), dims({"N", "1"})), "f32[N,3]");
  EXPECT_EQ(broadcast(dims({"N"}), dims({"1"})), "f32[N]");
  EXPECT_EQ(broadcast(dims({"1"}), dims({"S"})), "f32[S]");
  // A dynamic dim against a static one > 1 must equal it.
  EXPECT_EQ(broadcast(dims({"N"}), dims({"4"})), "f32[4]");
  EXPECT_EQ(broadcast(dims({"?"}), dims({"5"})), "f32[5]");
  // Two different symbols, or two unknowns: nothing is known.
  EXPECT_EQ(broadcast(dims({"N"}), dims({"M"})), "f32[?]");
  EXPECT_EQ(broadcast(dims({"?"}), dims({"?"})), "f32[?]");
  EXPECT_EQ(broadcast(dims({"?"}), dims({"1"})), "f32[?]");
  EXPECT_EQ(broadcast(dims({"B", "S", "1"}), dims({"S", "64"})), "f32[B,S,64]");
}

} // namespace
