//===- ElementwiseKernelsTest.cpp - Unary, Cast and broadcast kernels -----===//
//
// Hand-checked cases of the unary elementwise kernels, Cast between dtypes,
// Dropout, and the broadcasting ops (arithmetic with integer wrap-around and
// truncating division, Pow over mixed dtypes, PRelu, Clip, Sum/Max/Min with
// NaN, comparisons, logic, Where, BatchNormalization), plus a randomized
// check of the strided broadcast loop against naive index arithmetic.
//
//===----------------------------------------------------------------------===//
#include "NodeRunner.h"
#include "ir/OpKind.h"
#include "runtime/reference/KernelUtils.h"
#include <cmath>
#include <limits>

using namespace solder;
using namespace solder::testing;

namespace {

using IV = std::vector<int64_t>;
using DV = std::vector<double>;

Tensor unary(OpKind K, const Tensor &X) { return NodeRunner(K).runOk({&X}); }

const double NaN = std::numeric_limits<double>::quiet_NaN();
const double Inf = std::numeric_limits<double>::infinity();

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

TEST(ElementwiseKernelsTest, Activations) {
  Tensor X = make(DType::F32, {5}, {-2, -0.5, 0, 0.5, 3});
  expectValues(unary(OpKind::Relu, X), {0, 0, 0, 0.5, 3});
  expectValues(NodeRunner(OpKind::LeakyRelu).attr("alpha", 0.1f).runOk({&X}),
               {-0.2, -0.05, 0, 0.5, 3});
  expectValues(unary(OpKind::LeakyRelu, X), {-0.02, -0.005, 0, 0.5, 3});
  expectValues(NodeRunner(OpKind::Elu).attr("alpha", 2.0f).runOk({&X}),
               {2 * (std::exp(-2.0) - 1), 2 * (std::exp(-0.5) - 1), 0, 0.5, 3});
  double A = 1.67326319217681884765625, G = 1.05070102214813232421875;
  expectValues(unary(OpKind::Selu, X),
               {G * A * (std::exp(-2.0) - 1), G * A * (std::exp(-0.5) - 1), 0,
                G * 0.5, G * 3});
  expectValues(unary(OpKind::HardSigmoid, X), {0.1, 0.4, 0.5, 0.6, 1});
  expectValues(unary(OpKind::HardSwish, X),
               {-2 * (0.5 - 2 / 6.0), -0.5 * (0.5 - 0.5 / 6), 0,
                0.5 * (0.5 + 0.5 / 6), 3});
  Tensor Far = make(DType::F32, {2}, {-3, 3});
  expectValues(unary(OpKind::HardSwish, Far), {0, 3});
  expectValues(unary(OpKind::Softsign, X),
               {-2.0 / 3, -0.5 / 1.5, 0, 0.5 / 1.5, 0.75});
  expectValues(unary(OpKind::Tanh, X), {std::tanh(-2.0), std::tanh(-0.5), 0,
                                        std::tanh(0.5), std::tanh(3.0)});
  // Integer Relu (opset 14).
  Tensor I = make(DType::I32, {3}, {-5, 0, 7});
  EXPECT_EQ(toInts(unary(OpKind::Relu, I)), (IV{0, 0, 7}));
  NodeRunner(OpKind::Elu).expectError({&I}, "i32 is not supported");
}

TEST(ElementwiseKernelsTest, SigmoidAndSoftplusAreStable) {
  Tensor X = make(DType::F32, {5}, {-200, -1, 0, 1, 200});
  expectValues(unary(OpKind::Sigmoid, X),
               {0, 1 / (1 + std::exp(1.0)), 0.5, 1 / (1 + std::exp(-1.0)), 1});
  expectValues(unary(OpKind::Softplus, X),
               {0, std::log1p(std::exp(-1.0)), std::log(2.0),
                std::log1p(std::exp(1.0)), 200});
}

TEST(ElementwiseKernelsTest, GeluBothModes) {
  Tensor X = make(DType::F32, {3}, {-1, 0.5, 2});
  auto Exact = [](double V) {
    return 0.5 * V * (1 + std::erf(V / std::sqrt(2.0)));
  };
  auto Tanh = [](double V) {
    return 0.5 * V *
           (1 + std::tanh(std::sqrt(2 / M_PI) * (V + 0.044715 * V * V * V)));
  };
  expectValues(unary(OpKind::Gelu, X), {Exact(-1), Exact(0.5), Exact(2)});
  expectValues(NodeRunner(OpKind::Gelu).attr("approximate", "tanh").runOk({&X}),
               {Tanh(-1), Tanh(0.5), Tanh(2)});
  NodeRunner(OpKind::Gelu)
      .attr("approximate", "cubic")
      .expectError({&X}, "unknown approximate mode");
}

TEST(ElementwiseKernelsTest, MathFunctions) {
  Tensor X = make(DType::F64, {4}, {0.25, 1, 2.5, 9});
  expectValues(unary(OpKind::Sqrt, X), {0.5, 1, std::sqrt(2.5), 3}, 1e-12);
  expectValues(unary(OpKind::Exp, X),
               {std::exp(0.25), std::exp(1.0), std::exp(2.5), std::exp(9.0)},
               1e-12);
  expectValues(unary(OpKind::Log, X),
               {std::log(0.25), 0, std::log(2.5), std::log(9.0)}, 1e-12);
  expectValues(unary(OpKind::Reciprocal, X), {4, 1, 0.4, 1 / 9.0}, 1e-12);
  expectValues(unary(OpKind::Erf, X),
               {std::erf(0.25), std::erf(1.0), std::erf(2.5), std::erf(9.0)},
               1e-12);
  Tensor Y = make(DType::F32, {4}, {-1.5, -0.5, 0.5, 2});
  expectValues(unary(OpKind::Floor, Y), {-2, -1, 0, 2});
  expectValues(unary(OpKind::Ceil, Y), {-1, -0, 1, 2});
  expectValues(unary(OpKind::Abs, Y), {1.5, 0.5, 0.5, 2});
  expectValues(unary(OpKind::Neg, Y), {1.5, 0.5, -0.5, -2});
  Tensor L = make(DType::F32, {2}, {0, -1});
  expectValues(unary(OpKind::Log, L), {-Inf, NaN});
  expectValues(unary(OpKind::Sqrt, L), {0, NaN});
}

TEST(ElementwiseKernelsTest, IntegerUnaryWraps) {
  Tensor X = make(DType::I8, {3}, {-128, -3, 5});
  EXPECT_EQ(toInts(unary(OpKind::Neg, X)), (IV{-128, 3, -5}));
  EXPECT_EQ(toInts(unary(OpKind::Abs, X)), (IV{-128, 3, 5}));
  Tensor U = make(DType::U16, {2}, {0, 65535});
  EXPECT_EQ(toInts(unary(OpKind::Abs, U)), (IV{0, 65535}));
  NodeRunner(OpKind::Neg).expectError({&U}, "u16 is not supported");
  Tensor E = make(DType::I32, {2}, {0, 3});
  EXPECT_EQ(toInts(unary(OpKind::Erf, E)), (IV{0, 0}));
}

TEST(ElementwiseKernelsTest, HalfTypesRoundOncePerElement) {
  // 1 + 2^-11 is halfway between two f16 neighbours: ties to even -> 1.
  Tensor A = make(DType::F16, {2}, {1, 1});
  Tensor B =
      make(DType::F16, {2}, {std::ldexp(1.0, -11), std::ldexp(3.0, -11)});
  Tensor S = NodeRunner(OpKind::Add).runOk({&A, &B});
  ASSERT_EQ(S.dtype(), DType::F16);
  EXPECT_EQ(S.data<uint16_t>()[0], floatToHalf(1.0f));
  EXPECT_EQ(S.data<uint16_t>()[1], floatToHalf(1.0f + std::ldexp(1.0f, -9)));
  Tensor X = make(DType::BF16, {2}, {-1, 4});
  Tensor Y = unary(OpKind::Sqrt, X);
  ASSERT_EQ(Y.dtype(), DType::BF16);
  expectValues(Y, {NaN, 2});
  Tensor H = make(DType::F16, {1}, {0.3});
  EXPECT_EQ(unary(OpKind::Exp, H).data<uint16_t>()[0],
            floatToHalf(std::exp(halfToFloat(floatToHalf(0.3f)))));
}

TEST(ElementwiseKernelsTest, NotAndDropout) {
  Tensor B = make(DType::Bool, {3}, {1, 0, 1});
  EXPECT_EQ(toInts(unary(OpKind::Not, B)), (IV{0, 1, 0}));
  Tensor F = make(DType::F32, {1}, {1});
  NodeRunner(OpKind::Not).expectError({&F}, "f32 is not supported");

  Tensor X = make(DType::F32, {2, 2}, {1, 2, 3, 4});
  auto R = NodeRunner(OpKind::Dropout, 2).run({&X});
  ASSERT_TRUE(bool(R)) << llvm::toString(R.takeError());
  EXPECT_TRUE((*R)[0].bitwiseEqual(X));
  EXPECT_EQ((*R)[1].dtype(), DType::Bool);
  EXPECT_EQ(toInts((*R)[1]), (IV{1, 1, 1, 1}));
  Tensor Ratio = make(DType::F32, {}, {0.5});
  Tensor Train = make(DType::Bool, {}, {1});
  NodeRunner(OpKind::Dropout)
      .expectError({&X, &Ratio, &Train}, "training mode");
  Tensor Zero = make(DType::F32, {}, {0});
  EXPECT_TRUE(
      NodeRunner(OpKind::Dropout).runOk({&X, &Zero, &Train}).bitwiseEqual(X));
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

Tensor cast(const Tensor &X, DType To) {
  return NodeRunner(OpKind::Cast)
      .attr("to", int64_t(onnxDTypeCode(To)))
      .runOk({&X});
}

TEST(ElementwiseKernelsTest, CastFloatToInteger) {
  Tensor X = make(DType::F32, {6}, {-1.7, -0.5, 0.9, 2.5, 300, NaN});
  Tensor I = cast(X, DType::I32);
  ASSERT_EQ(I.dtype(), DType::I32);
  EXPECT_EQ(toInts(I), (IV{-1, 0, 0, 2, 300, 0}));
  // Wraps like numpy: 300 -> 44, -1.7 -> -1 -> 255.
  EXPECT_EQ(toInts(cast(X, DType::U8)), (IV{255, 0, 0, 2, 44, 0}));
  Tensor Big = make(DType::F64, {2}, {1e30, -1e30});
  EXPECT_EQ(toInts(cast(Big, DType::I64)),
            (IV{std::numeric_limits<int64_t>::max(),
                std::numeric_limits<int64_t>::min()}));
}

TEST(ElementwiseKernelsTest, CastBoolAndIntegers) {
  Tensor X = make(DType::F32, {4}, {0, -0.0, 0.1, NaN});
  EXPECT_EQ(toInts(cast(X, DType::Bool)), (IV{0, 0, 1, 1}));
  Tensor B = make(DType::Bool, {2}, {1, 0});
  expectValues(cast(B, DType::F16), {1, 0});
  EXPECT_EQ(toInts(cast(B, DType::I64)), (IV{1, 0}));
  Tensor L = make(DType::I64, {3}, {300, -1, 65536 + 7});
  EXPECT_EQ(toInts(cast(L, DType::U8)), (IV{44, 255, 7}));
  EXPECT_EQ(toInts(cast(L, DType::I16)), (IV{300, -1, 7}));
  expectValues(cast(L, DType::F32), {300, -1, 65543});
}

TEST(ElementwiseKernelsTest, CastBetweenFloats) {
  // f32 -> bf16 rounds to nearest even.
  Tensor F = make(DType::F32, {2}, {0.48033667, 1 + std::ldexp(1.0, -8)});
  Tensor Bf = cast(F, DType::BF16);
  ASSERT_EQ(Bf.dtype(), DType::BF16);
  EXPECT_EQ(Bf.data<uint16_t>()[0], floatToBF16(0.48033667f));
  EXPECT_EQ(Bf.getDouble(1), 1.0); // tie -> even
  // f64 -> f16 rounds once: 1 + 2^-11 + 2^-30 is just above the halfway
  // point, so it rounds up, while a double->float->half chain would first
  // drop 2^-30 and then tie to even (down).
  Tensor D =
      make(DType::F64, {1}, {1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -30)});
  EXPECT_EQ(cast(D, DType::F16).getDouble(0), 1 + std::ldexp(1.0, -10));
  Tensor H = make(DType::F16, {2}, {65504, -0.5});
  expectValues(cast(H, DType::F64), {65504, -0.5});
  Tensor Huge = make(DType::F32, {1}, {1e6});
  EXPECT_EQ(cast(Huge, DType::F16).getDouble(0), Inf);
  // Same type: the input itself.
  EXPECT_EQ(cast(F, DType::F32).rawData(), F.rawData());
  NodeRunner(OpKind::Cast)
      .attr("to", int64_t(8))
      .expectError({&F}, "not supported");
}

//===----------------------------------------------------------------------===//
// Broadcasting arithmetic
//===----------------------------------------------------------------------===//

Tensor binary(OpKind K, const Tensor &A, const Tensor &B) {
  return NodeRunner(K).runOk({&A, &B});
}

TEST(ElementwiseKernelsTest, BroadcastShapes) {
  Tensor A = make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor B = make(DType::F32, {3}, {10, 20, 30});
  Tensor S = binary(OpKind::Add, A, B);
  EXPECT_EQ(dimsOf(S), (IV{2, 3}));
  expectValues(S, {11, 22, 33, 14, 25, 36});
  Tensor C = make(DType::F32, {2, 1}, {100, 200});
  expectValues(binary(OpKind::Sub, A, C), {-99, -98, -97, -196, -195, -194});
  Tensor Row = make(DType::F32, {1, 3}, {1, 2, 3});
  Tensor Out = binary(OpKind::Mul, C, Row); // [2,1] x [1,3] -> [2,3]
  EXPECT_EQ(dimsOf(Out), (IV{2, 3}));
  expectValues(Out, {100, 200, 300, 200, 400, 600});
  Tensor Scalar = make(DType::F32, {}, {2});
  expectValues(binary(OpKind::Div, Scalar, A),
               {2, 1, 2 / 3.0, 0.5, 0.4, 1 / 3.0});
  Tensor Bad = make(DType::F32, {2}, {1, 2});
  NodeRunner(OpKind::Add).expectError({&A, &Bad}, "Add node 'n'");
  NodeRunner(OpKind::Add).expectError({&A, &Bad}, "do not broadcast");
  Tensor I = make(DType::I32, {3}, {1, 2, 3});
  NodeRunner(OpKind::Add).expectError({&B, &I}, "operand types differ");
  // Empty operands give empty results.
  Tensor E = make(DType::F32, {0, 3}, {});
  EXPECT_EQ(dimsOf(binary(OpKind::Add, E, B)), (IV{0, 3}));
}

TEST(ElementwiseKernelsTest, IntegerArithmetic) {
  Tensor A = make(DType::U8, {3}, {250, 3, 16});
  Tensor B = make(DType::U8, {3}, {10, 5, 20});
  EXPECT_EQ(toInts(binary(OpKind::Add, A, B)), (IV{4, 8, 36}));
  EXPECT_EQ(toInts(binary(OpKind::Sub, A, B)), (IV{240, 254, 252}));
  EXPECT_EQ(toInts(binary(OpKind::Mul, A, B)), (IV{196, 15, 64}));
  EXPECT_EQ(toInts(binary(OpKind::Div, A, B)), (IV{25, 0, 0}));
  // Signed Div truncates toward zero; a zero divisor gives 0.
  Tensor C = make(DType::I32, {5}, {-7, 7, -7, 5, INT32_MIN});
  Tensor D = make(DType::I32, {5}, {2, -2, -2, 0, -1});
  EXPECT_EQ(toInts(binary(OpKind::Div, C, D)), (IV{-3, -3, 3, 0, INT32_MIN}));
  Tensor M = Tensor::fromInt64s({INT64_MAX});
  Tensor Two = make(DType::I64, {1}, {2});
  EXPECT_EQ(toInts(binary(OpKind::Mul, M, Two)), (IV{-2}));
  Tensor U16 = make(DType::U16, {1}, {65535});
  EXPECT_EQ(toInts(binary(OpKind::Mul, U16, U16)), (IV{1}));
}

TEST(ElementwiseKernelsTest, PowMixedTypes) {
  Tensor F = make(DType::F32, {3}, {2, 4, -8});
  Tensor E = make(DType::F32, {3}, {3, 0.5, 1.0 / 3});
  expectValues(binary(OpKind::Pow, F, E), {8, 2, NaN});
  Tensor IE = make(DType::I64, {3}, {2, -1, 3});
  Tensor P = binary(OpKind::Pow, F, IE);
  EXPECT_EQ(P.dtype(), DType::F32);
  expectValues(P, {4, 0.25, -512});
  Tensor I = make(DType::I32, {4}, {2, -3, 1, -1});
  Tensor IE2 = make(DType::I32, {4}, {10, 3, -5, -3});
  EXPECT_EQ(toInts(binary(OpKind::Pow, I, IE2)), (IV{1024, -27, 1, -1}));
  Tensor Fe = make(DType::F32, {4}, {2, 2, 0.5, 2.5});
  Tensor IP = binary(OpKind::Pow, I, Fe);
  EXPECT_EQ(IP.dtype(), DType::I32);
  EXPECT_EQ(toInts(IP), (IV{4, 9, 1, 0}));
}

TEST(ElementwiseKernelsTest, PReluAndClip) {
  Tensor X = make(DType::F32, {1, 2, 2}, {-1, 2, -3, 4});
  Tensor Slope = make(DType::F32, {2, 1}, {0.5, 0.1});
  expectValues(binary(OpKind::PRelu, X, Slope), {-0.5, 2, -0.3, 4});
  Tensor Big = make(DType::F32, {3, 1, 1, 1}, {1, 2, 3});
  NodeRunner(OpKind::PRelu).expectError({&X, &Big}, "slope");

  Tensor Y = make(DType::F32, {5}, {-Inf, -2, 0.5, 3, NaN});
  Tensor Lo = make(DType::F32, {}, {-1});
  Tensor Hi = make(DType::F32, {1}, {1});
  expectValues(NodeRunner(OpKind::Clip).runOk({&Y, &Lo, &Hi}),
               {-1, -1, 0.5, 1, NaN});
  expectValues(NodeRunner(OpKind::Clip).runOk({&Y, nullptr, &Hi}),
               {-Inf, -2, 0.5, 1, NaN});
  expectValues(NodeRunner(OpKind::Clip).runOk({&Y, &Lo}),
               {-1, -1, 0.5, 3, NaN});
  expectValues(NodeRunner(OpKind::Clip).runOk({&Y}), {-Inf, -2, 0.5, 3, NaN});
  // min > max: everything becomes max.
  expectValues(NodeRunner(OpKind::Clip).runOk({&Y, &Hi, &Lo}),
               {-1, -1, -1, -1, NaN});
  Tensor I = make(DType::I8, {3}, {-128, 0, 127});
  Tensor ILo = make(DType::I8, {}, {-5});
  EXPECT_EQ(toInts(NodeRunner(OpKind::Clip).runOk({&I, &ILo})),
            (IV{-5, 0, 127}));
  NodeRunner(OpKind::Clip).expectError({&I, &Lo}, "min has type f32");
}

TEST(ElementwiseKernelsTest, VariadicSumMaxMin) {
  Tensor A = make(DType::F32, {2, 1}, {1, 5});
  Tensor B = make(DType::F32, {3}, {2, NaN, 4});
  Tensor C = make(DType::F32, {}, {3});
  Tensor S = NodeRunner(OpKind::Sum).runOk({&A, &B, &C});
  EXPECT_EQ(dimsOf(S), (IV{2, 3}));
  expectValues(S, {6, NaN, 8, 10, NaN, 12});
  expectValues(NodeRunner(OpKind::Max).runOk({&A, &B, &C}),
               {3, NaN, 4, 5, NaN, 5});
  expectValues(NodeRunner(OpKind::Min).runOk({&A, &B, &C}),
               {1, NaN, 1, 2, NaN, 3});
  Tensor Only = NodeRunner(OpKind::Max).runOk({&A});
  EXPECT_TRUE(Only.bitwiseEqual(A));
  Tensor U = make(DType::U64, {2}, {1, 1e19});
  Tensor V = make(DType::U64, {2}, {2, 3});
  expectValues(NodeRunner(OpKind::Min).runOk({&U, &V}), {1, 3});
  expectValues(NodeRunner(OpKind::Max).runOk({&U, &V}), {2, 1e19});
}

TEST(ElementwiseKernelsTest, ComparisonsAndLogic) {
  Tensor A = make(DType::I64, {2, 2}, {1, 2, 3, 4});
  Tensor B = make(DType::I64, {2}, {2, 2});
  auto Check = [&](OpKind K, IV Expected) {
    Tensor R = binary(K, A, B);
    EXPECT_EQ(R.dtype(), DType::Bool);
    EXPECT_EQ(toInts(R), Expected) << opName(K).str();
  };
  Check(OpKind::Equal, {0, 1, 0, 0});
  Check(OpKind::Less, {1, 0, 0, 0});
  Check(OpKind::LessOrEqual, {1, 1, 0, 0});
  Check(OpKind::Greater, {0, 0, 1, 1});
  Check(OpKind::GreaterOrEqual, {0, 1, 1, 1});
  Tensor F = make(DType::F16, {2}, {NaN, 1});
  EXPECT_EQ(toInts(binary(OpKind::Equal, F, F)), (IV{0, 1}));
  Tensor P = make(DType::Bool, {2, 2}, {0, 0, 1, 1});
  Tensor Q = make(DType::Bool, {2}, {0, 1});
  EXPECT_EQ(toInts(binary(OpKind::And, P, Q)), (IV{0, 0, 0, 1}));
  EXPECT_EQ(toInts(binary(OpKind::Or, P, Q)), (IV{0, 1, 1, 1}));
  EXPECT_EQ(toInts(binary(OpKind::Equal, P, Q)), (IV{1, 0, 0, 1}));
  NodeRunner(OpKind::And).expectError({&A, &B}, "i64 is not supported");
}

TEST(ElementwiseKernelsTest, WhereBroadcastsAllThree) {
  Tensor Cond = make(DType::Bool, {2, 1}, {1, 0});
  Tensor X = make(DType::I32, {3}, {1, 2, 3});
  Tensor Y = make(DType::I32, {}, {-1});
  Tensor R = NodeRunner(OpKind::Where).runOk({&Cond, &X, &Y});
  EXPECT_EQ(dimsOf(R), (IV{2, 3}));
  EXPECT_EQ(toInts(R), (IV{1, 2, 3, -1, -1, -1}));
  Tensor Same = make(DType::Bool, {3}, {1, 0, 1});
  Tensor Z = make(DType::I32, {3}, {7, 8, 9});
  EXPECT_EQ(toInts(NodeRunner(OpKind::Where).runOk({&Same, &X, &Z})),
            (IV{1, 8, 3}));
  NodeRunner(OpKind::Where).expectError({&X, &X, &Z}, "condition must be bool");
}

TEST(ElementwiseKernelsTest, BatchNormalization) {
  Tensor X = make(DType::F32, {1, 2, 2}, {1, 2, 3, 4});
  Tensor Scale = make(DType::F32, {2}, {2, 0.5});
  Tensor B = make(DType::F32, {2}, {1, -1});
  Tensor Mean = make(DType::F32, {2}, {1.5, 3});
  Tensor Var = make(DType::F32, {2}, {0.25, 4});
  Tensor Y = NodeRunner(OpKind::BatchNormalization)
                 .attr("epsilon", 0.0f)
                 .runOk({&X, &Scale, &B, &Mean, &Var});
  expectValues(Y, {-1, 3, -1, -0.75});
  Tensor Short = make(DType::F32, {1}, {1});
  NodeRunner(OpKind::BatchNormalization)
      .expectError({&X, &Short, &B, &Mean, &Var}, "scale must have shape [2]");
}

/// The strided loop against naive index arithmetic on random shapes.
TEST(ElementwiseKernelsTest, RandomBroadcastMatchesNaive) {
  std::mt19937 Gen(7);
  for (int Trial = 0; Trial < 200; ++Trial) {
    unsigned Rank = Gen() % 5;
    IV Out(Rank), ADims, BDims;
    for (auto &D : Out)
      D = 1 + Gen() % 4;
    unsigned ARank = Gen() % (Rank + 1), BRank = Gen() % (Rank + 1);
    for (unsigned I = Rank - ARank; I < Rank; ++I)
      ADims.push_back(Gen() % 2 ? Out[I] : 1);
    for (unsigned I = Rank - BRank; I < Rank; ++I)
      BDims.push_back(Gen() % 2 ? Out[I] : 1);
    Tensor A(DType::I64, ADims), B(DType::I64, BDims);
    for (int64_t I = 0; I < A.numElements(); ++I)
      A.mutableData<int64_t>()[I] = Gen() % 1000;
    for (int64_t I = 0; I < B.numElements(); ++I)
      B.mutableData<int64_t>()[I] = Gen() % 1000 * 1000;
    Tensor R = binary(OpKind::Add, A, B);
    ref::DimVector Expect;
    ASSERT_TRUE(ref::broadcastDims({A.dims(), B.dims()}, Expect));
    ASSERT_EQ(dimsOf(R), IV(Expect.begin(), Expect.end()));
    // Naive: decompose the output index, pick each operand's element.
    auto Pick = [&](const Tensor &T, int64_t Flat) {
      IV Idx(R.rank());
      for (int D = R.rank() - 1; D >= 0; --D) {
        Idx[D] = Flat % R.dims()[D];
        Flat /= R.dims()[D];
      }
      int64_t Off = 0;
      unsigned Lead = R.rank() - T.rank();
      for (unsigned D = 0; D < T.rank(); ++D)
        Off = Off * T.dims()[D] + (T.dims()[D] == 1 ? 0 : Idx[Lead + D]);
      return T.data<int64_t>()[Off];
    };
    for (int64_t I = 0; I < R.numElements(); ++I)
      ASSERT_EQ(R.data<int64_t>()[I], Pick(A, I) + Pick(B, I))
          << "trial " << Trial << " element " << I;
  }
}

} // namespace
