//===- MathKernelsTest.cpp - Trigonometric, rounding and Mod kernels ------===//
//
// Hand-checked cases of the trigonometric and hyperbolic functions, Round
// (halves to even), Sign, Mish, the IsNaN/IsInf predicates and Mod in both
// modes: NaN, infinities, negative zero, out-of-domain inputs, integer
// extremes, f16 rounding and the dtypes each op refuses.
//
//===----------------------------------------------------------------------===//
#include "NodeRunner.h"
#include "ir/OpKind.h"
#include "ir/OpRegistry.h"
#include <cmath>
#include <limits>

using namespace solder;
using namespace solder::testing;

namespace {

using IV = std::vector<int64_t>;

const double NaN = std::numeric_limits<double>::quiet_NaN();
const double Inf = std::numeric_limits<double>::infinity();
const double Pi = 3.14159265358979323846;

Tensor unary(OpKind K, const Tensor &X) { return NodeRunner(K).runOk({&X}); }

bool negZero(const Tensor &T, int64_t I) {
  return T.getDouble(I) == 0 && std::signbit(T.getDouble(I));
}

TEST(MathKernelsTest, TrigonometricMatchLibm) {
  const std::vector<double> In = {-0.75, 0.25, 0.5, 0.9};
  Tensor X = make(DType::F64, {4}, In);
  struct Case {
    OpKind K;
    double (*F)(double);
  };
  const Case Cases[] = {
      {OpKind::Sin, std::sin},     {OpKind::Cos, std::cos},
      {OpKind::Tan, std::tan},     {OpKind::Asin, std::asin},
      {OpKind::Acos, std::acos},   {OpKind::Atan, std::atan},
      {OpKind::Sinh, std::sinh},   {OpKind::Cosh, std::cosh},
      {OpKind::Asinh, std::asinh}, {OpKind::Atanh, std::atanh},
  };
  for (const Case &C : Cases) {
    std::vector<double> Want;
    for (double V : In)
      Want.push_back(C.F(V));
    Tensor Y = unary(C.K, X);
    EXPECT_EQ(Y.dtype(), DType::F64);
    expectValues(Y, Want, 1e-15);
  }
  Tensor A = make(DType::F64, {3}, {1, 1.5, 10});
  expectValues(unary(OpKind::Acosh, A), {0, std::acosh(1.5), std::acosh(10.0)},
               1e-15);
}

TEST(MathKernelsTest, TrigonometricEdgeCases) {
  Tensor X = make(DType::F32, {5}, {-1, 1, 2, -0.0, NaN});
  expectValues(unary(OpKind::Asin, X), {-Pi / 2, Pi / 2, NaN, 0, NaN});
  expectValues(unary(OpKind::Acos, X), {Pi, 0, NaN, Pi / 2, NaN});
  expectValues(unary(OpKind::Atanh, X), {-Inf, Inf, NaN, 0, NaN});
  expectValues(unary(OpKind::Acosh, X), {NaN, 0, std::acosh(2.0), NaN, NaN});
  // Odd functions keep the sign of zero.
  for (OpKind K : {OpKind::Sin, OpKind::Tan, OpKind::Asin, OpKind::Atan,
                   OpKind::Sinh, OpKind::Asinh, OpKind::Atanh})
    EXPECT_TRUE(negZero(unary(K, X), 3)) << getOpInfo(K).Name.str();
  Tensor Big = make(DType::F32, {3}, {-100, 100, Inf});
  expectValues(unary(OpKind::Sinh, Big), {-Inf, Inf, Inf});
  expectValues(unary(OpKind::Cosh, Big), {Inf, Inf, Inf});
  expectValues(unary(OpKind::Atan, Big),
               {std::atan(-100.0), std::atan(100.0), Pi / 2});
  expectValues(unary(OpKind::Sin, Big),
               {std::sin(-100.0), std::sin(100.0), NaN}, 1e-6);
}

TEST(MathKernelsTest, HalfTypesRoundTheFloatResultOnce) {
  Tensor X = make(DType::F16, {2}, {1, -2});
  Tensor Y = unary(OpKind::Sin, X);
  ASSERT_EQ(Y.dtype(), DType::F16);
  EXPECT_EQ(Y.data<uint16_t>()[0], floatToHalf(std::sin(1.0f)));
  EXPECT_EQ(Y.data<uint16_t>()[1], floatToHalf(std::sin(-2.0f)));
  Tensor B = make(DType::BF16, {1}, {3});
  EXPECT_EQ(unary(OpKind::Cosh, B).data<uint16_t>()[0],
            floatToBF16(std::cosh(3.0f)));
}

TEST(MathKernelsTest, FloatOnlyOpsRefuseIntegers) {
  Tensor I = make(DType::I32, {2}, {1, 2});
  for (OpKind K : {OpKind::Sin, OpKind::Acosh, OpKind::Round, OpKind::Mish,
                   OpKind::IsNaN, OpKind::IsInf})
    NodeRunner(K).expectError({&I}, "i32 is not supported");
}

TEST(MathKernelsTest, RoundHalvesToEven) {
  Tensor X = make(DType::F32, {12},
                  {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 2.6, -0.4, NaN,
                   -Inf, 8388609});
  Tensor Y = unary(OpKind::Round, X);
  expectValues(Y, {0, 2, 2, -0.0, -2, -2, 0, 3, -0.0, NaN, -Inf, 8388609});
  EXPECT_TRUE(negZero(Y, 3));
  EXPECT_TRUE(negZero(Y, 8));
  EXPECT_FALSE(std::signbit(Y.getDouble(0)));
  Tensor H = make(DType::F16, {3}, {2.5, 3.5, -4.5});
  expectValues(unary(OpKind::Round, H), {2, 4, -4});
  Tensor D = make(DType::F64, {2}, {4503599627370497.0, 0.5000000000000001});
  expectValues(unary(OpKind::Round, D), {4503599627370497.0, 1}, 0);
}

TEST(MathKernelsTest, SignOfEveryKind) {
  Tensor F = make(DType::F32, {6}, {-3, -0.0, 0, 2.5, NaN, -Inf});
  Tensor Y = unary(OpKind::Sign, F);
  expectValues(Y, {-1, 0, 0, 1, NaN, -1});
  EXPECT_FALSE(std::signbit(Y.getDouble(1))); // numpy.sign(-0.0) is +0
  Tensor I = make(DType::I8, {3}, {-128, 0, 127});
  EXPECT_EQ(toInts(unary(OpKind::Sign, I)), (IV{-1, 0, 1}));
  Tensor U = make(DType::U8, {3}, {0, 1, 255});
  EXPECT_EQ(toInts(unary(OpKind::Sign, U)), (IV{0, 1, 1}));
  Tensor L = make(DType::I64, {2}, {-5e15, 7});
  EXPECT_EQ(toInts(unary(OpKind::Sign, L)), (IV{-1, 1}));
  Tensor B = make(DType::Bool, {1}, {1});
  NodeRunner(OpKind::Sign).expectError({&B}, "bool is not supported");
}

TEST(MathKernelsTest, MishIsStable) {
  Tensor X = make(DType::F32, {6}, {-100, -1, -0.0, 0.5, 30, 1e30});
  auto Mish = [](double V) { return V * std::tanh(std::log1p(std::exp(V))); };
  Tensor Y = unary(OpKind::Mish, X);
  expectValues(Y, {Mish(-100), Mish(-1), 0, Mish(0.5), 30, 1e30});
  EXPECT_TRUE(negZero(Y, 2));
}

TEST(MathKernelsTest, IsNaNAndIsInf) {
  Tensor X = make(DType::F32, {5}, {NaN, -Inf, Inf, 0, -3.4e38});
  Tensor N = unary(OpKind::IsNaN, X);
  ASSERT_EQ(N.dtype(), DType::Bool);
  EXPECT_EQ(toInts(N), (IV{1, 0, 0, 0, 0}));
  EXPECT_EQ(toInts(unary(OpKind::IsInf, X)), (IV{0, 1, 1, 0, 0}));
  EXPECT_EQ(toInts(NodeRunner(OpKind::IsInf)
                       .attr("detect_negative", int64_t(0))
                       .runOk({&X})),
            (IV{0, 0, 1, 0, 0}));
  EXPECT_EQ(toInts(NodeRunner(OpKind::IsInf)
                       .attr("detect_positive", int64_t(0))
                       .runOk({&X})),
            (IV{0, 1, 0, 0, 0}));
  EXPECT_EQ(toInts(NodeRunner(OpKind::IsInf)
                       .attr("detect_positive", int64_t(0))
                       .attr("detect_negative", int64_t(0))
                       .runOk({&X})),
            (IV{0, 0, 0, 0, 0}));
  // The 16-bit types: f16's largest finite value is not infinite.
  Tensor H = make(DType::F16, {3}, {65504, Inf, NaN});
  EXPECT_EQ(toInts(unary(OpKind::IsInf, H)), (IV{0, 1, 0}));
  EXPECT_EQ(toInts(unary(OpKind::IsNaN, H)), (IV{0, 0, 1}));
  Tensor B = make(DType::BF16, {2}, {-Inf, NaN});
  EXPECT_EQ(toInts(unary(OpKind::IsNaN, B)), (IV{0, 1}));
}

//===----------------------------------------------------------------------===//
// Mod
//===----------------------------------------------------------------------===//

Tensor mod(const Tensor &A, const Tensor &B, int64_t Fmod = 0) {
  return NodeRunner(OpKind::Mod).attr("fmod", Fmod).runOk({&A, &B});
}

TEST(MathKernelsTest, ModIntegerTakesTheDivisorsSign) {
  Tensor A = make(DType::I32, {6}, {-4, 7, 5, 4, -7, 8});
  Tensor B = make(DType::I32, {6}, {3, -3, 8, -2, 3, 5});
  // Python's %: the remainder has the divisor's sign.
  EXPECT_EQ(toInts(mod(A, B)), (IV{2, -2, 5, 0, 2, 3}));
  // C's fmod: the dividend's sign.
  EXPECT_EQ(toInts(mod(A, B, 1)), (IV{-1, 1, 5, 0, -1, 3}));
  // INT_MIN % -1 overflows in C; its remainder is 0.
  Tensor Min = make(DType::I8, {2}, {-128, -128});
  Tensor M1 = make(DType::I8, {2}, {-1, 3});
  EXPECT_EQ(toInts(mod(Min, M1)), (IV{0, 1}));
  EXPECT_EQ(toInts(mod(Min, M1, 1)), (IV{0, -2}));
  Tensor L = make(DType::I64, {1}, {-9223372036854775807.0});
  Tensor LM = make(DType::I64, {1}, {-1});
  EXPECT_EQ(toInts(mod(L, LM)), (IV{0}));
  Tensor U = make(DType::U32, {3}, {7, 4294967295.0, 0});
  Tensor UB = make(DType::U32, {3}, {3, 10, 5});
  EXPECT_EQ(toInts(mod(U, UB)), (IV{1, 5, 0}));
  EXPECT_EQ(toInts(mod(U, UB, 1)), (IV{1, 5, 0}));
}

TEST(MathKernelsTest, ModBroadcasts) {
  Tensor A = make(DType::I16, {2, 3}, {-5, 5, 9, 10, -10, 0});
  Tensor B = make(DType::I16, {3}, {3, -4, 7});
  Tensor Y = mod(A, B);
  EXPECT_EQ(Y.dtype(), DType::I16);
  EXPECT_EQ(toInts(Y), (IV{1, -3, 2, 1, -2, 0}));
}

TEST(MathKernelsTest, ModFloatIsFmod) {
  Tensor A = make(DType::F32, {7}, {5.5, -5.5, 5.5, 1, -0.0, Inf, 3});
  Tensor B = make(DType::F32, {7}, {2, 2, -2, 0, 3, 2, Inf});
  Tensor Y = mod(A, B, 1);
  expectValues(Y, {1.5, -1.5, 1.5, NaN, -0.0, NaN, 3});
  EXPECT_TRUE(negZero(Y, 4));
  Tensor H = make(DType::F16, {2}, {-4.5, 7});
  Tensor HB = make(DType::F16, {2}, {2, -0.75});
  expectValues(mod(H, HB, 1), {-0.5, 0.25});
  NodeRunner(OpKind::Mod).expectError({&A, &B}, "fmod must be 1 for f32");
}

TEST(MathKernelsTest, ModIntegerByZeroIsAnError) {
  Tensor A = make(DType::I32, {2}, {4, 5});
  Tensor Z = make(DType::I32, {2}, {2, 0});
  NodeRunner(OpKind::Mod)
      .expectError({&A, &Z}, "integer division by zero (divisor "
                             "element 1)");
  NodeRunner(OpKind::Mod)
      .attr("fmod", int64_t(1))
      .expectError({&A, &Z}, "Mod node 'n': integer division by zero");
  // An empty dividend divides nothing.
  Tensor E(DType::I32, {0, 2});
  Tensor Y = mod(E, Z);
  EXPECT_EQ(Y.numElements(), 0);
  Tensor F = make(DType::F32, {1}, {1});
  Tensor I = make(DType::I32, {1}, {1});
  NodeRunner(OpKind::Mod).expectError({&F, &I}, "operand types differ");
}

} // namespace
