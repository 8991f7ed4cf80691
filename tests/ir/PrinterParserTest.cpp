//===- PrinterParserTest.cpp - Textual IR round trips and parse errors
//-----===//
//
// Canonical texts covering every syntax feature must parse and print back
// byte for byte; graphs built through the API (every dtype, random bit
// patterns, odd names) must survive print -> parse bit-exactly; and each
// kind of parse error is reported with line:col next to a twin that parses.
//
//===----------------------------------------------------------------------===//
#include "ir/OpRegistry.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <random>

using namespace solder;

namespace {

std::unique_ptr<Graph> parseOk(llvm::StringRef Text, bool Verify = true) {
  auto G = Verify ? parseGraph(Text) : parseGraphUnverified(Text);
  if (!G) {
    ADD_FAILURE() << llvm::toString(G.takeError()) << "\nin:\n" << Text.str();
    return nullptr;
  }
  return std::move(*G);
}

/// The error message of a parse that must fail.
std::string parseError(llvm::StringRef Text, bool Verify = true) {
  auto G = Verify ? parseGraph(Text) : parseGraphUnverified(Text);
  if (G) {
    ADD_FAILURE() << "parse unexpectedly succeeded:\n" << Text.str();
    return "";
  }
  return llvm::toString(G.takeError());
}

void expectRoundTrip(llvm::StringRef Text, bool Verify = true) {
  auto G = parseOk(Text, Verify);
  ASSERT_TRUE(G);
  EXPECT_EQ(graphToString(*G), Text.str());
}

// Every statement kind, quoted names, `none` operands, node names, symbolic
// and unknown dims, scalars, outputs repeated / inputs / constants as
// outputs, readable and hex constants of several dtypes, and a body graph.
// Types are what shape inference gives, so this also passes the verifier.
const char *const ValidGraph = R"(graph "main_graph" opset 17 {
  input %input : f32[N,3,8,8]
  input %"onnx::Mask_1" : i64[B,S]
  input %"/layer1/conv/Conv_output_0" : f32[?,4]
  input %"sym bol" : f32["batch size",2]
  input %1 : f32[]
  const %w : f32[4,3,1,1] = [1.0, 2.5, -3.0, 4e-05, 0.1, -0.0, 1e+20, 100.0, 16777216.0, 1.1754944e-38, 1e-45, 3.4028235e+38]
  const %b : f32[4] = [inf, -inf, 0.0, -1.5]
  const %sizes : i64[2] = [1, 3]
  const %"q\"uo\\te\n\x01" : bool[3] = [true, false, true]
  const %h : f16[17] = hex"003c003c003c003c003c003c003c003c003c003c003c003c003c003c003c003c003c"
  const %bf : bf16[3] = [0.1, -2.0, 3.39e+38]
  const %hf : f16[4] = [0.1, 65504.0, 6e-08, -0.0]
  const %d : f64[3] = [0.1, -1e+300, 5e-324]
  const %i8 : i8[2] = [-128, 127]
  const %u8 : u8[2] = [0, 255]
  const %i16 : i16[2] = [-32768, 32767]
  const %u16 : u16[1] = [65535]
  const %i32 : i32[2] = [-2147483648, 2147483647]
  const %u32 : u32[1] = [4294967295]
  const %i64 : i64[2] = [-9223372036854775808, 9223372036854775807]
  const %u64 : u64[1] = [18446744073709551615]
  const %scalar : f32[] = [0.5]
  const %empty : f32[0,3] = []
  %x = Conv(%input, %w, none) {dilations = [1, 1], group = 1, pads = [0, 0, 0, 0], strides = [2, 2]} : f32[N,4,4,4] @"conv1"
  %a, %b.1 = Split(%x, %sizes) {axis = 1} : f32[N,1,4,4], f32[N,3,4,4] @"split \"quoted\""
  %y = Dropout(%a, none, none) : f32[N,1,4,4]
  %c = Cast(%"onnx::Mask_1") {saturate = 1, to = 1} : f32[B,S]
  %z = ConstantOfShape(%sizes) {value = tensor<f16[1]: [0.0]>} : f16[1,3]
  %g = Gelu(%c) {approximate = "tanh"} : f32[B,S]
  %e = Elu(%g) {alpha = 1.0} : f32[B,S]
  %n = Not(%"q\"uo\\te\n\x01") : bool[3]
  %s = Add(%1, %scalar) : f32[]
  %r = FusedGroup(%e) {id = 0, kind = "loop", members = ["q"]} : f32[B,S] body graph "fused" opset 0 {
    input %p : f32[B,S]
    %q = Relu(%p) : f32[B,S]
    output %q
  }
  output %y
  output %y
  output %input
  output %b
  output %r
}
)";

TEST(PrinterParserTest, CanonicalTextRoundTrips) {
  expectRoundTrip(ValidGraph);
}

TEST(PrinterParserTest, ParsedGraphHasExpectedStructure) {
  auto G = parseOk(ValidGraph);
  ASSERT_TRUE(G);
  EXPECT_EQ(G->name(), "main_graph");
  EXPECT_EQ(G->opsetVersion(), 17);
  ASSERT_EQ(G->inputs().size(), 5u);
  EXPECT_EQ(G->inputs()[1]->name(), "onnx::Mask_1");
  EXPECT_EQ(G->inputs()[3]->shape()[0], Dim::symbol("batch size"));
  EXPECT_TRUE(G->inputs()[2]->shape()[0].isUnknown());
  EXPECT_EQ(G->inputs()[4]->type().rank(), 0u);
  EXPECT_NE(G->lookup("q\"uo\\te\n\x01"), nullptr);

  Node &Conv = *G->nodes().front();
  EXPECT_EQ(Conv.kind(), OpKind::Conv);
  EXPECT_EQ(Conv.name(), "conv1");
  EXPECT_EQ(Conv.numOperands(), 3u);
  EXPECT_EQ(Conv.operand(2), nullptr);
  EXPECT_EQ(Conv.attrs().getInts("strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Conv.attrs().find("group")->kind(), AttrKind::Int);

  const Tensor &W = *G->lookup("w")->constant();
  EXPECT_EQ(W.data<float>()[1], 2.5f);
  EXPECT_EQ(W.data<float>()[3], 4e-05f);
  uint32_t NegZero;
  std::memcpy(&NegZero, &W.data<float>()[5], 4);
  EXPECT_EQ(NegZero, 0x80000000u);
  EXPECT_EQ(W.data<float>()[11], 3.4028235e+38f);
  const Tensor &Big = *G->lookup("h")->constant();
  EXPECT_EQ(Big.numElements(), 17);
  EXPECT_EQ(Big.data<uint16_t>()[16], 0x3c00);
  EXPECT_EQ(G->lookup("i64")->constant()->data<int64_t>()[0], INT64_MIN);
  EXPECT_EQ(G->lookup("u64")->constant()->data<uint64_t>()[0], UINT64_MAX);
  EXPECT_EQ(G->lookup("d")->constant()->data<double>()[2],
            4.9406564584124654e-324);

  ASSERT_EQ(G->outputs().size(), 5u);
  EXPECT_EQ(G->outputs()[0], G->outputs()[1]);
  EXPECT_TRUE(G->outputs()[2]->isGraphInput());
  EXPECT_TRUE(G->outputs()[3]->isConstant());

  Node &Last = *G->nodes().back();
  ASSERT_NE(Last.body(), nullptr);
  EXPECT_EQ(Last.body()->name(), "fused");
  EXPECT_EQ(Last.body()->nodes().size(), 1u);
}

// Attribute syntax of every kind (not all accepted by any op, so this text
// is parsed without verification).
TEST(PrinterParserTest, AttributeKindsRoundTrip) {
  const char *Text = R"(graph "g" opset 21 {
  input %x : f32[2]
  %y = Relu(%x) {e1 = ints[], e2 = floats[], e3 = strings[], f = [1.0, 2.5e-07, -0.0], fi = inf, fl = -3.5, fn = -inf, fnan = nan, i = -7, is = [1, -2, 9223372036854775807], "odd name" = 3, s = "a\tb", ss = ["a", "b\n", ""], t = tensor<i64[2]: [1, -2]>, tb = tensor<f32[17]: hex"0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000c07f">, tn = tensor<null>, ts = tensor<bool[]: [false]>} : f32[2]
  output %y
}
)";
  auto G = parseOk(Text, /*Verify=*/false);
  ASSERT_TRUE(G);
  EXPECT_EQ(graphToString(*G), Text);
  const AttrMap &A = G->nodes().front()->attrs();
  EXPECT_EQ(A.find("i")->kind(), AttrKind::Int);
  EXPECT_EQ(A.find("fl")->kind(), AttrKind::Float);
  EXPECT_EQ(A.find("f")->kind(), AttrKind::Floats);
  EXPECT_EQ(A.find("e1")->kind(), AttrKind::Ints);
  // An empty ints list reads as absent: the caller's default (fuzz: Conv
  // with strides = ints[] planned empty strides shape inference read as
  // ones); a list with values reads as itself.
  EXPECT_EQ(A.getInts("e1", {1, 1}), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(A.getInts("e1"), std::vector<int64_t>());
  EXPECT_EQ(A.getInts("is", {0}),
            (std::vector<int64_t>{1, -2, 9223372036854775807}));
  EXPECT_EQ(A.find("e2")->kind(), AttrKind::Floats);
  EXPECT_EQ(A.find("e3")->kind(), AttrKind::Strings);
  EXPECT_EQ(A.find("ss")->getStrings()[1], "b\n");
  EXPECT_TRUE(std::isnan(A.find("fnan")->getFloat()));
  EXPECT_EQ(A.find("fn")->getFloat(), -INFINITY);
  EXPECT_EQ(A.find("t")->getTensor().getInt64(1), -2);
  EXPECT_TRUE(A.find("tn")->getTensor().isNull());
  EXPECT_EQ(A.find("tb")->getTensor().numElements(), 17);
  EXPECT_EQ(A.find("odd name")->getInt(), 3);
}

TEST(PrinterParserTest, AbsentResults) {
  // Trailing absent results are dropped (the node has fewer results).
  auto G = parseOk(R"(graph "g" opset 17 {
  input %x : f32[2]
  %y, _ = Dropout(%x) : f32[2], _
  output %y
})");
  ASSERT_TRUE(G);
  EXPECT_EQ(G->nodes().front()->numResults(), 1u);
  // An absent result before a present one cannot be represented.
  std::string E = parseError(R"(graph "g" opset 17 {
  input %x : f32[2]
  %y, _, %z = LayerNormalization(%x, %x) : f32[2], _, f32[1]
  output %y
})");
  EXPECT_NE(E.find("3:7: an absent result ('_') before a present one"),
            std::string::npos)
      << E;
}

TEST(PrinterParserTest, HandWrittenFormsAreNormalized) {
  // Comments, free layout, untyped ints in float data, omitted result
  // types (inferred), NaN written readably (printed back as hex).
  auto G = parseOk(R"(// leading comment
graph "g" opset 13 {   // trailing comment
  input %x : f32[2,3]
  const %k : f32[3] = [1, 2, nan]
  const %big : i64[20] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]
  const %flags : bool[2] = [1, 0]
  %y = Add(%x,
           %k)
  output %y
})");
  ASSERT_TRUE(G);
  EXPECT_EQ(graphToString(*G), R"(graph "g" opset 13 {
  input %x : f32[2,3]
  const %k : f32[3] = hex"0000803f000000400000c07f"
  const %big : i64[20] = hex"00000000000000000100000000000000020000000000000003000000000000000400000000000000050000000000000006000000000000000700000000000000080000000000000009000000000000000a000000000000000b000000000000000c000000000000000d000000000000000e000000000000000f000000000000001000000000000000110000000000000012000000000000001300000000000000"
  const %flags : bool[2] = [true, false]
  %y = Add(%x, %k) : f32[2,3]
  output %y
}
)");
}

/// Random bytes for a tensor, including NaN payloads, infinities,
/// subnormals and negative zeros for the float types.
Tensor randomTensor(DType T, llvm::ArrayRef<int64_t> Dims, std::mt19937 &Rng) {
  Tensor R(T, Dims);
  auto *P = static_cast<unsigned char *>(R.mutableRawData());
  for (size_t I = 0; I < R.byteSize(); ++I)
    P[I] = static_cast<unsigned char>(Rng());
  if (T == DType::Bool)
    for (size_t I = 0; I < R.byteSize(); ++I)
      P[I] &= 1;
  return R;
}

TEST(PrinterParserTest, ApiGraphRoundTripsBitExactly) {
  std::mt19937 Rng(1234);
  DType All[] = {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8,
                 DType::U8,  DType::I16, DType::U16,  DType::I32, DType::U32,
                 DType::I64, DType::U64, DType::Bool};
  for (unsigned Threshold : {0u, 4u, 16u, 1000u}) {
    Graph G("api graph \xff");
    G.setOpsetVersion(21);
    std::vector<Value *> Consts;
    int K = 0;
    for (DType T : All)
      for (int64_t N : {0, 1, 3, 16, 17, 64}) {
        // Odd names: spaces, quotes, slashes, control and high bytes.
        std::string Name = "c/" + dtypeName(T).str() + " \"" +
                           std::to_string(N) + "\"\t\x7f\xc3\xa9" +
                           std::to_string(K++);
        Consts.push_back(G.addConstant(Name, randomTensor(T, {N}, Rng)));
      }
    // A NaN with payload in a small tensor, and bools stored as 2.
    uint32_t Payload = 0x7f800123;
    Consts.push_back(
        G.addConstant("nanpayload", Tensor::copyOf(DType::F32, {1}, &Payload)));
    uint8_t Two = 2;
    Consts.push_back(
        G.addConstant("booltwo", Tensor::copyOf(DType::Bool, {1}, &Two)));
    Value *X = G.addInput("x", TensorType(DType::F32, {Dim::symbol("N"), 4}));
    Node *R = G.addNode(OpKind::Relu, {X}, {"0relu"}, "node\nname");
    ASSERT_FALSE(bool(inferNodeTypes(*R)));
    G.addOutput(R->result());
    for (Value *C : Consts)
      G.addOutput(C);

    PrintOptions Opts;
    Opts.ElideThresholdElements = Threshold;
    std::string Text = graphToString(G, Opts);
    auto P = parseOk(Text);
    ASSERT_TRUE(P);
    EXPECT_EQ(graphToString(*P, Opts), Text);
    EXPECT_EQ(graphToString(*P), graphToString(G));
    EXPECT_EQ(P->name(), G.name());
    ASSERT_EQ(P->constants().size(), G.constants().size());
    for (size_t I = 0; I < G.constants().size(); ++I) {
      EXPECT_EQ(P->constants()[I]->name(), G.constants()[I]->name());
      EXPECT_TRUE(P->constants()[I]->constant()->bitwiseEqual(
          *G.constants()[I]->constant()))
          << G.constants()[I]->name() << " threshold " << Threshold;
    }
    EXPECT_EQ(P->nodes().front()->name(), "node\nname");
    ASSERT_EQ(P->outputs().size(), G.outputs().size());
    for (size_t I = 0; I < G.outputs().size(); ++I)
      EXPECT_EQ(P->outputs()[I]->name(), G.outputs()[I]->name());
  }
}

TEST(PrinterParserTest, FloatFormatting) {
  EXPECT_EQ(formatFloat(1.0f), "1.0");
  EXPECT_EQ(formatFloat(0.1f), "0.1");
  EXPECT_EQ(formatFloat(-0.0f), "-0.0");
  EXPECT_EQ(formatFloat(100.0f), "100.0");
  EXPECT_EQ(formatFloat(1e20f), "1e+20");
  EXPECT_EQ(formatFloat(4e-05f), "4e-05");
  EXPECT_EQ(formatFloat(INFINITY), "inf");
  EXPECT_EQ(formatFloat(-INFINITY), "-inf");
  EXPECT_EQ(formatFloat(NAN), "nan");
  EXPECT_EQ(formatDouble(0.1), "0.1");
  EXPECT_EQ(formatDouble(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(formatHalf(0x3c00), "1.0");
  EXPECT_EQ(formatBF16(0x3f80), "1.0");
  // Every float printed reads back to the same bits.
  std::mt19937 Rng(7);
  for (int I = 0; I < 20000; ++I) {
    uint32_t Bits = Rng();
    float F;
    std::memcpy(&F, &Bits, 4);
    if (std::isnan(F))
      continue;
    std::string S = formatFloat(F);
    float Back = std::strtof(S.c_str(), nullptr);
    uint32_t BackBits;
    std::memcpy(&BackBits, &Back, 4);
    ASSERT_EQ(BackBits, Bits) << S;
    ASSERT_NE(S.find_first_of(".ei"), std::string::npos) << S;
  }
}

TEST(PrinterParserTest, ElidedConstantsAreRejected) {
  Graph G;
  G.addConstant("small", Tensor::fromFloats({1, 2}, {2}));
  Value *Big = G.addConstant("big", Tensor(DType::F32, {64, 3}));
  G.addOutput(Big);
  PrintOptions Opts;
  Opts.ElideLargeConstants = true;
  std::string Text = graphToString(G, Opts);
  EXPECT_NE(Text.find("const %small : f32[2] = [1.0, 2.0]"), std::string::npos)
      << Text;
  EXPECT_NE(Text.find("const %big : f32[64,3] = elided"), std::string::npos)
      << Text;
  std::string E = parseError(Text);
  EXPECT_NE(E.find("3:28: constant data was elided"), std::string::npos) << E;
  // Its twin, printed in full, parses.
  EXPECT_TRUE(parseOk(graphToString(G)));
}

struct ErrorCase {
  const char *Good; // a statement that parses...
  const char *Bad;  // ...and the same statement broken
  const char *Message;
};

/// Wraps one statement in a graph defining %x : f32[2] and %i : i64[2].
std::string wrap(llvm::StringRef Stmt) {
  return "graph \"g\" opset 17 {\n  input %x : f32[2]\n  const %i : i64[2] "
         "= [1, 2]\n  " +
         Stmt.str() + "\n  output %x\n}\n";
}

TEST(PrinterParserTest, ParseErrors) {
  const ErrorCase Cases[] = {
      // Undefined values.
      {"%y = Relu(%x) : f32[2]", "%y = Relu(%nope) : f32[2]",
       "4:13: use of undefined value %nope"},
      {"%y = Relu(%x) : f32[2]\n  %z = Relu(%y) : f32[2]",
       "%z = Relu(%y) : f32[2]\n  %y = Relu(%x) : f32[2]",
       "4:13: use of undefined value %y"},
      {"output %x", "output %\"no such\"",
       "4:10: use of undefined value %\"no such\""},
      // Types.
      {"input %t : f32[N,?]", "input %t : f33[2]",
       "4:14: unknown element type 'f33'"},
      {"input %t : f32[N,?]", "input %t : f32[2,-1]",
       "4:20: dim -1 is out of range"},
      {"input %t : f32[N,?]", "input %t : f32[2,]", "4:20: expected a dim"},
      {"input %t : f32[N,?]", "input %t : f32 [2",
       "expected ',' or ']' in a type"},
      {"input %t : f32[N,?]", "input %t : f32[\"\"]", "empty dim symbol"},
      // Ops and names.
      {"%y = Relu(%x) : f32[2]", "%y = Frob(%x) : f32[2]",
       "4:8: unknown op 'Frob'"},
      {"input %t : f32[2]", "input %x : f32[2]",
       "4:9: redefinition of value %x"},
      {"%y = Relu(%x) : f32[2]", "%i = Relu(%x) : f32[2]",
       "4:3: redefinition of value %i"},
      {"%a, %b = Split(%x) {num_outputs = 2} : f32[1], f32[1]",
       "%a, %a = Split(%x) {num_outputs = 2} : f32[1], f32[1]",
       "4:7: redefinition of value %a"},
      {"input %t : f32[2]", "input % : f32[2]",
       "4:9: expected a value name after '%'"},
      {"input %t : f32[2]", "input %\"\" : f32[2]", "empty value name"},
      // Attributes.
      {"%y = Relu(%x) : f32[2]", "%y = Relu(%x) {alpha = } : f32[2]",
       "4:26: expected an attribute value"},
      {"%y = Concat(%x) {axis = 0} : f32[2]",
       "%y = Concat(%x) {axis = 0, axis = 0} : f32[2]",
       "4:30: duplicate attribute 'axis'"},
      {"%y = Transpose(%x) {perm = ints[]} : f32[2]",
       "%y = Transpose(%x) {perm = []} : f32[2]",
       "4:30: an empty list needs its kind"},
      {"%y = Transpose(%x) {perm = [0]} : f32[2]",
       "%y = Transpose(%x) {perm = [0, \"a\"]} : f32[2]",
       "4:30: a list mixes strings and numbers"},
      {"%y = Concat(%x) {axis = 0} : f32[2]",
       "%y = Concat(%x) {axis = 99999999999999999999} : f32[2]",
       "4:27: invalid or out-of-range integer"},
      {"%y = Relu(%x) : f32[2]", "%y = Relu(%x) {s = \"a\\q\"} : f32[2]",
       "unknown escape '\\q'"},
      // Constant data.
      {"const %c : i8[2] = [1, -1]", "const %c : i8[2] = [1, 300]",
       "4:26: value 300 is out of range for i8"},
      {"const %c : i8[2] = [1, -1]", "const %c : i8[2] = [1]",
       "4:22: constant data has 1 elements but i8[2] has 2"},
      {"const %c : i8[2] = [1, -1]", "const %c : i8[2] = [1, 2, 3]",
       "4:29: too many elements"},
      {"const %c : i32[1] = [7]", "const %c : i32[1] = [7.5]",
       "4:24: expected an integer for a i32 element"},
      {"const %c : f32[1] = [1e38]", "const %c : f32[1] = [1e39]",
       "out of range for f32"},
      {"const %c : bool[1] = [true]", "const %c : bool[1] = [yes]",
       "expected true or false"},
      {"const %c : f32[1] = hex\"0000803f\"",
       "const %c : f32[1] = hex\"00803f\"",
       "4:26: hex data has 3 bytes but f32[1] needs 4"},
      {"const %c : f32[1] = hex\"0000803f\"",
       "const %c : f32[1] = hex\"0000803g\"", "4:33: invalid hex digit"},
      {"const %c : f32[2] = [1.0, 2.0]", "const %c : f32[N] = [1.0, 2.0]",
       "4:14: constant data needs a static shape"},
      // Node syntax.
      {"%y = Relu(%x) : f32[2]", "%y = Relu(%x) : f32[2], f32[2]",
       "4:25: more result types than results"},
      {"%y = Relu(%x) : f32[2]", "%y = Relu(%x %x) : f32[2]",
       "4:16: expected ',' or ')' in operands"},
      {"%y = Relu(%x) : f32[2] @\"n\"", "%y = Relu(%x) : f32[2] @n",
       "4:27: expected a string"},
      {"%y = Relu(%x) : f32[2]", "%y = Relu(%x) : f32[2] $",
       "4:26: unexpected character '$'"},
      {"%y = Relu(%x) : f32[2]", "%y = Relu(%x) : f32[2]\n  %z = Relu(%x) : _",
       "5:19: '_' type for the present result %z"},
      // Verification runs after parsing.
      {"%y = Relu(%x) : f32[2]", "%y = Relu(%x) : f32[3]",
       "Relu node producing 'y': result 0 has type f32[3] but inference gives "
       "f32[2]"},
      {"%y = Relu(%x)", "%y = Relu()",
       "4:3: Relu node producing 'y': cannot infer result types"},
  };
  for (const ErrorCase &C : Cases) {
    SCOPED_TRACE(C.Bad);
    EXPECT_TRUE(parseOk(wrap(C.Good)));
    std::string E = parseError(wrap(C.Bad));
    EXPECT_NE(E.find(C.Message), std::string::npos) << "got: " << E;
  }
}

TEST(PrinterParserTest, TruncatedInput) {
  std::string Full = ValidGraph;
  EXPECT_TRUE(parseOk(Full));
  // Every proper prefix fails cleanly with a located error (cut points
  // step through the text, including inside strings and hex data).
  for (size_t Len = 0; Len + 1 < Full.size(); Len += 7) {
    std::string E = parseError(Full.substr(0, Len), /*Verify=*/false);
    EXPECT_NE(E.find(':'), std::string::npos) << E;
  }
  std::string E = parseError(Full.substr(0, Full.size() - 3));
  EXPECT_NE(E.find("unexpected end of input: missing '}' to close graph "
                   "\"main_graph\""),
            std::string::npos)
      << E;
  E = parseError(Full + "graph");
  EXPECT_NE(E.find("expected end of input after the graph"), std::string::npos)
      << E;
  E = parseError("graph \"g\" opset 1 {\n  input %x : f32[2]\n  const %c : "
                 "f32[1] = hex\"00");
  EXPECT_NE(E.find("3:26: unterminated string"), std::string::npos) << E;
}

TEST(PrinterParserTest, PrintNode) {
  auto G = parseOk(wrap("%y = Concat(%x, %x) {axis = 0} : f32[4] @\"cat\""));
  ASSERT_TRUE(G);
  EXPECT_EQ(nodeToString(*G->nodes().front()),
            "%y = Concat(%x, %x) {axis = 0} : f32[4] @\"cat\"");
}

} // namespace
