//===- ExprTableTest.cpp - Op-to-expression table and conversions ---------===//
#include "codegen/ExprTable.h"
#include "ir/Parser.h"
#include <gtest/gtest.h>

using namespace solder;

namespace {

/// The one node of a parsed single-node graph.
const Node &onlyNode(const std::unique_ptr<Graph> &G) {
  return *G->nodes().front();
}

std::unique_ptr<Graph> parse(const std::string &Text) {
  auto G = parseGraph(Text);
  EXPECT_TRUE(bool(G)) << llvm::toString(G.takeError());
  return G ? std::move(*G) : nullptr;
}

std::string exprOf(const std::string &Text,
                   std::vector<std::string> Args = {"a", "b", "c", "d", "e"}) {
  auto G = parse(Text);
  if (!G)
    return "<parse error>";
  const Node &N = onlyNode(G);
  Args.resize(N.numOperands());
  auto E = elementwiseExpr(N, Args);
  if (!E)
    return "error: " + llvm::toString(E.takeError());
  return *E;
}

TEST(ExprTable, ComputeTypes) {
  EXPECT_EQ(computeTypeName(DType::F16), "float");
  EXPECT_EQ(computeTypeName(DType::BF16), "float");
  EXPECT_EQ(computeTypeName(DType::F32), "float");
  EXPECT_EQ(computeTypeName(DType::F64), "double");
  EXPECT_EQ(computeTypeName(DType::I8), "int");
  EXPECT_EQ(computeTypeName(DType::U16), "int");
  EXPECT_EQ(computeTypeName(DType::U32), "unsigned int");
  EXPECT_EQ(computeTypeName(DType::I64), "long long");
  EXPECT_EQ(computeTypeName(DType::Bool), "bool");
}

TEST(ExprTable, LoadStoreConvertHalfTypesThroughFloat) {
  EXPECT_EQ(loadExpr(DType::F16, "x[i]"), "__half2float(x[i])");
  EXPECT_EQ(loadExpr(DType::BF16, "x[i]"), "__bfloat162float(x[i])");
  EXPECT_EQ(loadExpr(DType::F32, "x[i]"), "x[i]");
  EXPECT_EQ(storeExpr(DType::F16, "v"), "__float2half_rn(v)");
  EXPECT_EQ(storeExpr(DType::BF16, "v"), "__float2bfloat16_rn(v)");
  EXPECT_EQ(storeExpr(DType::I8, "v"), "(signed char)(v)");
  EXPECT_EQ(storeExpr(DType::F32, "v"), "v");
}

TEST(ExprTable, ReluPerDType) {
  EXPECT_EQ(
      exprOf("graph \"g\" opset 21 {\n input %x : f32[4]\n %y = Relu(%x)\n "
             "output %y\n}"),
      "(fmaxf(a, (float)0))");
  EXPECT_EQ(
      exprOf("graph \"g\" opset 21 {\n input %x : f16[4]\n %y = Relu(%x)\n "
             "output %y\n}"),
      "(fmaxf(a, (float)0))");
  EXPECT_EQ(
      exprOf("graph \"g\" opset 21 {\n input %x : f64[4]\n %y = Relu(%x)\n "
             "output %y\n}"),
      "(fmax(a, (double)0))");
  EXPECT_EQ(
      exprOf("graph \"g\" opset 21 {\n input %x : i32[4]\n %y = Relu(%x)\n "
             "output %y\n}"),
      "(max(a, (int)0))");
}

TEST(ExprTable, AttributesAreBakedExactly) {
  // 0.1f is 0x1.99999ap-4.
  EXPECT_EQ(
      exprOf("graph \"g\" opset 21 {\n input %x : f32[4]\n %y = LeakyRelu(%x) "
             "{alpha = 0.1}\n output %y\n}"),
      "(a >= (float)0 ? a : ((0x1.99999ap-4f)) * a)");
  // Default alpha 0.01.
  EXPECT_NE(
      exprOf(
          "graph \"g\" opset 21 {\n input %x : f32[4]\n %y = LeakyRelu(%x)\n "
          "output %y\n}")
          .find("0x1.47ae14p-7f"),
      std::string::npos);
}

TEST(ExprTable, GeluModes) {
  std::string None = exprOf("graph \"g\" opset 21 {\n input %x : f32[4]\n %y = "
                            "Gelu(%x)\n output %y\n}");
  EXPECT_NE(None.find("erff("), std::string::npos);
  std::string Tanh =
      exprOf("graph \"g\" opset 21 {\n input %x : f32[4]\n %y = Gelu(%x) "
             "{approximate = \"tanh\"}\n output %y\n}");
  EXPECT_NE(Tanh.find("tanhf("), std::string::npos);
  EXPECT_NE(Tanh.find("0.044715"), std::string::npos);
  EXPECT_EQ(Tanh.find("__tanhf("), std::string::npos) << "f32 stays exact";
}

TEST(ExprTable, ReducedGeluTakesTheHardwareTanh) {
  // f16/bf16 operands, either mode: the tanh form on tanh.approx (what
  // cuBLASLt's GELU_BIAS computes for the same groups).
  for (const char *T : {"f16", "bf16"})
    for (const char *Mode : {"", " {approximate = \"tanh\"}"}) {
      std::string E =
          exprOf(std::string("graph \"g\" opset 21 {\n input %x : ") + T +
                 "[4]\n %y = Gelu(%x)" + Mode + "\n output %y\n}");
      EXPECT_NE(E.find("__tanhf("), std::string::npos) << T << Mode << E;
      EXPECT_EQ(E.find("erff("), std::string::npos) << E;
    }
}

TEST(ExprTable, VariadicFoldsLeft) {
  EXPECT_EQ(
      exprOf("graph \"g\" opset 21 {\n input %a : f32[4]\n input %b : f32[4]\n "
             "input %c : f32[4]\n %y = Sum(%a, %b, %c)\n output %y\n}"),
      "((a + b) + c)");
  EXPECT_EQ(
      exprOf("graph \"g\" opset 21 {\n input %a : i64[4]\n input %b : i64[4]\n "
             "%y = Max(%a, %b)\n output %y\n}"),
      "(max(a, b))");
}

TEST(ExprTable, ClipWithoutBoundsUsesTypeExtremes) {
  std::string E =
      exprOf("graph \"g\" opset 21 {\n input %x : f32[4]\n %y = Clip(%x)\n "
             "output %y\n}",
             {"a"});
  EXPECT_NE(E.find("__int_as_float((int)0xff800000)"), std::string::npos) << E;
  EXPECT_NE(E.find("__int_as_float(0x7f800000)"), std::string::npos) << E;
  std::string I =
      exprOf("graph \"g\" opset 21 {\n input %x : i8[4]\n %y = Clip(%x)\n "
             "output %y\n}",
             {"a"});
  EXPECT_NE(I.find("(-128)"), std::string::npos) << I;
  EXPECT_NE(I.find("(127)"), std::string::npos) << I;
}

TEST(ExprTable, ComparisonsWhereAndLogic) {
  EXPECT_EQ(
      exprOf("graph \"g\" opset 21 {\n input %a : f16[4]\n input %b : f16[4]\n "
             "%y = Less(%a, %b)\n output %y\n}"),
      "(a < b)");
  EXPECT_EQ(
      exprOf(
          "graph \"g\" opset 21 {\n input %c : bool[4]\n input %a : i64[4]\n "
          "input %b : i64[4]\n %y = Where(%c, %a, %b)\n output %y\n}"),
      "(a ? b : c)");
  EXPECT_EQ(
      exprOf("graph \"g\" opset 21 {\n input %a : bool[4]\n %y = Not(%a)\n "
             "output %y\n}"),
      "(!a)");
}

TEST(ExprTable, UnsupportedDTypeNamesTheNode) {
  auto G =
      parse("graph \"g\" opset 21 {\n input %x : i32[4]\n %y = Sigmoid(%x)\n "
            "output %y\n}");
  ASSERT_TRUE(G);
  auto E = elementwiseExpr(onlyNode(G), {"a"});
  ASSERT_FALSE(bool(E));
  std::string Msg = llvm::toString(E.takeError());
  EXPECT_NE(Msg.find("Sigmoid node"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("does not support Sigmoid on i32"), std::string::npos)
      << Msg;
  EXPECT_FALSE(hasExprRule(OpKind::And, DType::F32));
  EXPECT_TRUE(hasExprRule(OpKind::And, DType::Bool));
}

/// The expression of a one-node graph Op(%x[, %y]) {Attrs} on dtype T.
std::string exprFor(const std::string &Op, const std::string &T,
                    const std::string &Attrs = "", bool Binary = false) {
  std::string Text = "graph \"g\" opset 21 {\n input %x : " + T + "[4]\n";
  if (Binary)
    Text += " input %y : " + T + "[4]\n";
  Text += " %z = " + Op + (Binary ? "(%x, %y)" : "(%x)") +
          (Attrs.empty() ? "" : " {" + Attrs + "}") + "\n output %z\n}";
  return exprOf(Text);
}

TEST(ExprTable, RoundSignAndTrigonometry) {
  EXPECT_EQ(exprFor("Round", "f32"), "(rintf(a))");
  EXPECT_EQ(exprFor("Round", "f64"), "(rint(a))");
  EXPECT_EQ(exprFor("Acosh", "f16"), "(acoshf(a))");
  EXPECT_EQ(exprFor("Sign", "u8"), "(a > (int)0 ? (int)1 : (int)0)");
  EXPECT_EQ(exprFor("Sign", "f32"),
            "(a > (float)0 ? (float)1 : (a < (float)0 ? (float)-1 : "
            "(a == (float)0 ? (float)0 : a)))");
  EXPECT_NE(exprFor("Round", "i32").find("does not support Round on i32"),
            std::string::npos);
}

TEST(ExprTable, IsInfDetectsWhatItsAttributesSay) {
  EXPECT_EQ(exprFor("IsInf", "f32"), "(isinf(a))");
  EXPECT_EQ(exprFor("IsInf", "f32", "detect_negative = 0"),
            "(isinf(a) && a > (float)0)");
  EXPECT_EQ(exprFor("IsInf", "f64", "detect_positive = 0"),
            "(isinf(a) && a < (double)0)");
  EXPECT_EQ(exprFor("IsInf", "f32", "detect_negative = 0, detect_positive = 0"),
            "(false)");
  EXPECT_EQ(exprFor("IsNaN", "bf16"), "(isnan(a))");
}

TEST(ExprTable, ModPerModeAndDType) {
  EXPECT_EQ(exprFor("Mod", "f32", "fmod = 1", true), "(fmodf(a, b))");
  EXPECT_EQ(exprFor("Mod", "f64", "fmod = 1", true), "(fmod(a, b))");
  EXPECT_EQ(exprFor("Mod", "i64", "fmod = 1", true),
            "(b == (long long)0 || b == (long long)-1 ? (long long)0 : a % b)");
  EXPECT_EQ(exprFor("Mod", "u32", "", true),
            "(b == (unsigned int)0 ? (unsigned int)0 : a % b)");
  // Python's sign rule adds the divisor to a remainder of the other sign.
  std::string Py = exprFor("Mod", "i8", "", true);
  EXPECT_NE(Py.find("(a % b < (int)0) != (b < (int)0) ? a % b + b : a % b"),
            std::string::npos)
      << Py;
}

TEST(ExprTable, CastConversions) {
  EXPECT_EQ(castToStorage(DType::F32, DType::F16, "v"), "__float2half_rn((v))");
  EXPECT_EQ(castToStorage(DType::F64, DType::BF16, "v"),
            "__double2bfloat16((v))");
  EXPECT_EQ(castToStorage(DType::F32, DType::Bool, "v"), "((v) != (float)0)");
  EXPECT_EQ(castToStorage(DType::Bool, DType::F32, "v"), "(float)(v)");
  EXPECT_EQ(castToStorage(DType::F32, DType::U8, "v"),
            "(unsigned char)(long long)(v)");
  EXPECT_EQ(castToStorage(DType::I64, DType::I32, "v"), "(int)(v)");
  EXPECT_EQ(castToStorage(DType::I32, DType::F16, "v"),
            "__double2half((double)(v))");
}

TEST(ExprTable, Literals) {
  EXPECT_EQ(computeLiteral(DType::F32, 0.5), "(0x1p-1f)");
  EXPECT_EQ(computeLiteral(DType::F16, -2), "(-0x1p+1f)");
  EXPECT_EQ(computeLiteral(DType::F64, 0.1), "(0x1.999999999999ap-4)");
  EXPECT_EQ(computeLiteral(DType::I64, -3), "(-3LL)");
  EXPECT_EQ(computeLiteral(DType::Bool, 1), "true");
  EXPECT_EQ(storageLiteral(DType::F16, 1.0),
            "__ushort_as_half((unsigned short)0x3c00)");
  EXPECT_EQ(storageLiteral(DType::BF16, 1.0),
            "__ushort_as_bfloat16((unsigned short)0x3f80)");
  EXPECT_EQ(storageLiteral(DType::U8, 7), "(unsigned char)(7)");
  EXPECT_EQ(lowestLiteral(DType::I64), "(-9223372036854775807LL - 1)");
}

} // namespace
