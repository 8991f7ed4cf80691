//===- VerifierTest.cpp - Each verifier check, with a passing twin
//---------===//
//
// Every broken graph here has a twin that differs only in the defect and
// verifies cleanly, so each check is shown to fire and to stay quiet.
//
//===----------------------------------------------------------------------===//
#include "ir/Verifier.h"
#include "ir/OpRegistry.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include <gtest/gtest.h>

using namespace solder;

namespace {

/// "" when G verifies, else the message.
std::string verify(const Graph &G) {
  if (llvm::Error E = verifyGraph(G))
    return llvm::toString(std::move(E));
  return "";
}

void expectValid(const Graph &G) {
  EXPECT_EQ(verify(G), "") << graphToString(G);
}

void expectInvalid(const Graph &G, llvm::StringRef Message) {
  std::string E = verify(G);
  EXPECT_NE(E.find(Message.str()), std::string::npos)
      << "expected '" << Message.str() << "' in:\n"
      << E << "\nfor:\n"
      << graphToString(G);
}

std::unique_ptr<Graph> parse(llvm::StringRef Text) {
  auto G = parseGraphUnverified(Text);
  if (!G) {
    ADD_FAILURE() << llvm::toString(G.takeError());
    return std::make_unique<Graph>();
  }
  return std::move(*G);
}

TensorType f32(llvm::ArrayRef<int64_t> Dims) {
  return TensorType(DType::F32, Dims);
}

/// Infers the node's types, failing the test if that fails.
Node *inferred(Node *N) {
  if (llvm::Error E = inferNodeTypes(*N))
    ADD_FAILURE() << llvm::toString(std::move(E));
  return N;
}

TEST(VerifierTest, ResultTypeMustMatchInference) {
  const char *Good = R"(graph "g" opset 17 {
  input %x : f32[1,3]
  %y = Relu(%x) : f32[1,3] @"c"
  output %y
})";
  const char *Bad = R"(graph "g" opset 17 {
  input %x : f32[1,3]
  %y = Relu(%x) : f32[1,2] @"c"
  output %y
})";
  expectValid(*parse(Good));
  auto G = parse(Bad);
  expectInvalid(*G, "Relu node 'c': result 0 has type f32[1,2] but "
                    "inference gives f32[1,3]");
  // Verifying leaves the graph unchanged.
  EXPECT_EQ(typeToString(G->nodes().front()->result()->type()), "f32[1,2]");
  // Symbolic dims count: N is not 1.
  expectInvalid(*parse(R"(graph "g" opset 17 {
  input %x : f32[N,3]
  %y = Relu(%x) : f32[1,3]
  output %y
})"),
                "result 0 has type f32[1,3] but inference gives f32[N,3]");
}

TEST(VerifierTest, InferenceFailureIsReported) {
  expectValid(*parse(R"(graph "g" opset 17 {
  input %x : f32[2]
  input %i : f32[2]
  %y = Add(%x, %i) : f32[2]
  output %y
})"));
  expectInvalid(*parse(R"(graph "g" opset 17 {
  input %x : f32[2]
  input %i : i64[2]
  %y = Add(%x, %i) : f32[2]
  output %y
})"),
                "shape inference fails: Add node producing 'y'");
}

TEST(VerifierTest, OperandMustBeDefinedBeforeUse) {
  Graph Good, Bad;
  for (Graph *G : {&Good, &Bad}) {
    Value *X = G->addInput("x", f32({2}));
    Node *A = inferred(G->addNode(OpKind::Relu, {X}, {"a"}, "first"));
    if (G == &Good) {
      G->addOutput(
          inferred(G->addNode(OpKind::Relu, {A->result()}, {"b"}, "second"))
              ->result());
    } else {
      // Inserted before its operand's producer.
      Node *B = G->insertNode(G->nodes().begin(), OpKind::Relu, {A->result()},
                              {"b"}, "second");
      inferred(B);
      G->addOutput(B->result());
    }
  }
  expectValid(Good);
  expectInvalid(Bad, "Relu node 'second': operand 0 uses %a before its "
                     "definition");
}

TEST(VerifierTest, OperandMustBelongToTheGraph) {
  Graph Other;
  Value *Foreign = Other.addInput("f", f32({2}));
  Graph Good, Bad;
  Value *X = Good.addInput("x", f32({2}));
  Good.addOutput(
      inferred(Good.addNode(OpKind::Relu, {X}, {"y"}, "r"))->result());
  Bad.addInput("x", f32({2}));
  Bad.addOutput(
      inferred(Bad.addNode(OpKind::Relu, {Foreign}, {"y"}, "r"))->result());
  expectValid(Good);
  expectInvalid(Bad, "Relu node 'r': operand 0 (%f) belongs to another graph");
  // Outputs too.
  Good.addOutput(X);
  expectValid(Good);
  Good.addOutput(Foreign);
  expectInvalid(Good, "output 2 (%f) is not defined in this graph");
}

TEST(VerifierTest, OperandCounts) {
  Graph Good, Bad;
  for (Graph *G : {&Good, &Bad}) {
    Value *X = G->addInput("x", f32({2}));
    llvm::SmallVector<Value *, 2> Ops = {X, X};
    if (G == &Bad)
      Ops.pop_back();
    Node *N = G->addNode(OpKind::Add, Ops, {"y"}, "add");
    N->result()->setType(f32({2}));
    G->addOutput(N->result());
  }
  expectValid(Good);
  expectInvalid(Bad, "Add node 'add': has 1 operands, Add takes 2");
}

TEST(VerifierTest, RequiredOperandsMustBePresent) {
  const char *Good = R"(graph "g" opset 17 {
  input %x : f32[1,1,4,4]
  const %w : f32[1,1,1,1] = [1.0]
  %y = Conv(%x, %w, none) : f32[1,1,4,4] @"c"
  output %y
})";
  const char *Bad = R"(graph "g" opset 17 {
  input %x : f32[1,1,4,4]
  const %w : f32[1,1,1,1] = [1.0]
  %y = Conv(%x, none, %w) : f32[1,1,4,4] @"c"
  output %y
})";
  expectValid(*parse(Good));
  expectInvalid(*parse(Bad), "Conv node 'c': required operand 1 is missing");
}

TEST(VerifierTest, ResultCounts) {
  Graph Good, Bad;
  for (Graph *G : {&Good, &Bad}) {
    Value *X = G->addInput("x", f32({2}));
    std::vector<std::string> Names = {"y"};
    if (G == &Bad)
      Names.push_back("z");
    Node *N = G->addNode(OpKind::Relu, {X}, Names, "r");
    for (Value *R : N->results())
      R->setType(f32({2}));
    G->addOutput(N->result());
  }
  expectValid(Good);
  expectInvalid(Bad, "Relu node 'r': has 2 results, Relu produces 1 to 1");
}

TEST(VerifierTest, AttributesMustBeKnownAndOfTheRightKind) {
  auto Make = [](llvm::StringRef Attr) {
    return parse((R"(graph "g" opset 17 {
  input %x : f32[1,1,4,4]
  const %w : f32[1,1,1,1] = [1.0]
  %y = Conv(%x, %w) {)" +
                  Attr + R"(} : f32[1,1,4,4] @"c"
  output %y
})")
                     .str());
  };
  expectValid(*Make("group = 1, strides = [1, 1]"));
  expectInvalid(*Make("group = 1, strides = [1, 1], frob = 2"),
                "Conv node 'c': unknown attribute 'frob' for Conv");
  expectInvalid(*Make("group = 1.0"), "Conv node 'c': attribute 'group' is "
                                      "float but Conv expects int");
  expectInvalid(*Make("group = 1, strides = [1.0, 1.0]"),
                "attribute 'strides' is floats but Conv expects ints");
}

TEST(VerifierTest, ValuesNeedAnElementType) {
  Graph Good, Bad;
  Good.addInput("x", f32({2}));
  Bad.addInput("x", TensorType(DType::Undefined, Shape{Dim(2)}));
  expectValid(Good);
  expectInvalid(Bad, "input %x has no element type");

  // A node result that shape inference never filled in.
  Graph G;
  Value *X = G.addInput("x", f32({2}));
  Node *N = G.addNode(OpKind::Relu, {X}, {"y"}, "r");
  G.addOutput(N->result());
  expectInvalid(G, "result 0 of Relu node 'r' %y has no element type");
  inferred(N);
  expectValid(G);
}

TEST(VerifierTest, ConstantTypeMustMatchItsData) {
  Graph G;
  Value *C = G.addConstant("c", Tensor::fromFloats({1, 2}, {2}));
  G.addOutput(C);
  expectValid(G);
  C->setType(f32({1, 2}));
  expectInvalid(G, "constant %c has type f32[1,2] but its data is f32[2]");
}

TEST(VerifierTest, BodyGraphsAreVerified) {
  const char *Good = R"(graph "g" opset 17 {
  input %x : f32[2]
  %y = FusedGroup(%x) {id = 0, kind = "loop", members = ["q"]} : f32[2] @"fused" body graph "b" opset 0 {
    input %p : f32[2]
    %q = Relu(%p) : f32[2]
    output %q
  }
  output %y
})";
  const char *Bad = R"(graph "g" opset 17 {
  input %x : f32[2]
  %y = FusedGroup(%x) {id = 0, kind = "loop", members = ["q"]} : f32[2] @"fused" body graph "b" opset 0 {
    input %p : f32[2]
    %q = Relu(%p) : f32[3]
    output %q
  }
  output %y
})";
  expectValid(*parse(Good));
  expectInvalid(*parse(Bad),
                "in the body of FusedGroup node 'fused': Relu node "
                "producing 'q': result 0 has type f32[3]");
}

TEST(VerifierTest, OnlyFusedGroupsHaveBodies) {
  const char *Text = R"(graph "g" opset 17 {
  input %x : f32[2]
  %y = Relu(%x) : f32[2] @"r" body graph "b" opset 0 {
    input %p : f32[2]
    %q = Relu(%p) : f32[2]
    output %q
  }
  output %y
})";
  auto G = parseGraph(Text);
  ASSERT_FALSE(bool(G));
  EXPECT_NE(llvm::toString(G.takeError()).find("only FusedGroup nodes have"),
            std::string::npos);
}

TEST(VerifierTest, ReportsEveryProblem) {
  auto G = parse(R"(graph "g" opset 17 {
  input %x : f32[2]
  %y = Relu(%x) {alpha = 1.0} : f32[3] @"a"
  %z = Relu(%y) : f32[4] @"b"
  output %z
})");
  std::string E = verify(*G);
  EXPECT_NE(E.find("invalid graph \"g\":"), std::string::npos) << E;
  EXPECT_NE(E.find("Relu node 'a': unknown attribute 'alpha'"),
            std::string::npos)
      << E;
  EXPECT_NE(E.find("Relu node 'a': result 0 has type f32[3]"),
            std::string::npos)
      << E;
  EXPECT_NE(E.find("Relu node 'b': result 0 has type f32[4] but inference "
                   "gives f32[3]"),
            std::string::npos)
      << E;
}

TEST(VerifierTest, RewrittenGraphsStayValid) {
  // Graph's own rewrites keep the invariants (use lists, names, order).
  auto G = parse(R"(graph "g" opset 17 {
  input %x : f32[2]
  %a = Relu(%x) : f32[2]
  %b = Relu(%a) : f32[2]
  %c = Add(%a, %b) : f32[2]
  output %c
  output %a
})");
  expectValid(*G);
  Value *A = G->lookup("a");
  Value *B = G->lookup("b");
  G->replaceAllUsesWith(B, A);
  G->eraseNode(B->producer());
  expectValid(*G);
  G->replaceWithConstant(A, Tensor::fromFloats({1, 2}, {2}));
  expectValid(*G);
  EXPECT_TRUE(G->lookup("a")->isConstant());
}

} // namespace

TEST(VerifierTest, NhwcConvAndPoolHaveChannelsLastTypes) {
  // [N,H,W,C] input, [M,kH,kW,C] weights, [N,H',W',M] result.
  auto G = parse(R"(graph "g" opset 17 {
  input %x : f32[1,5,5,2]
  input %w : f32[3,3,3,2]
  %c = Conv(%x, %w) {layout = "NHWC", pads = [1, 1, 1, 1]} : f32[1,5,5,3] @"conv"
  %p = MaxPool(%c) {kernel_shape = [2, 2], layout = "NHWC", strides = [2, 2]} : f32[1,2,2,3] @"pool"
  output %p
})");
  expectValid(*G);
}

TEST(VerifierTest, NhwcConvWithNchwResultTypeIsRejected) {
  // Twin of the test above with the result typed as if NCHW.
  auto G = parse(R"(graph "g" opset 17 {
  input %x : f32[1,5,5,2]
  input %w : f32[3,3,3,2]
  %c = Conv(%x, %w) {layout = "NHWC", pads = [1, 1, 1, 1]} : f32[1,3,5,5] @"conv"
  output %c
})");
  expectInvalid(*G, "f32[1,5,5,3]");
}

TEST(VerifierTest, LayoutMustBeNchwOrTwoDimensionalNhwc) {
  auto Bad = parse(R"(graph "g" opset 17 {
  input %x : f32[1,2,5,5]
  input %w : f32[3,2,1,1]
  %c = Conv(%x, %w) {layout = "NCWH"} : f32[1,3,5,5] @"conv"
  output %c
})");
  expectInvalid(*Bad, "layout must be \"NCHW\" or \"NHWC\"");
  auto OneD = parse(R"(graph "g" opset 17 {
  input %x : f32[1,5,2]
  input %w : f32[3,1,2]
  %c = Conv(%x, %w) {layout = "NHWC"} : f32[1,5,3] @"conv"
  output %c
})");
  expectInvalid(*OneD, "needs a 2-D (rank 4) input");
  auto Explicit = parse(R"(graph "g" opset 17 {
  input %x : f32[1,2,5,5]
  input %w : f32[3,2,1,1]
  %c = Conv(%x, %w) {layout = "NCHW"} : f32[1,3,5,5] @"conv"
  output %c
})");
  expectValid(*Explicit);
}

TEST(VerifierTest, TransposeOfAScalarWithoutPermIsAScalar) {
  // The default perm of a rank-0 input is empty (the fuzzer found the
  // reversed-dims loop running from 2^32 - 1).
  auto G = parse(R"(graph "g" opset 17 {
  input %x : f32[]
  %t = Transpose(%x) : f32[] @"t"
  output %t
})");
  expectValid(*G);
}

TEST(VerifierTest, ConvTransposeOutputShapeGivesTheSpatialDims) {
  // output_shape as the spatial dims only, or after N and C.
  for (const char *Shape : {"[7, 8]", "[1, 2, 7, 8]"}) {
    auto G = parse(std::string(R"(graph "g" opset 17 {
  input %x : f32[1,1,3,3]
  const %w : f32[1,2,3,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9]
  %y = ConvTranspose(%x, %w) {output_shape = )") +
                   Shape + R"(, strides = [3, 2]} : f32[1,2,7,8] @"ct"
  output %y
})");
    expectValid(*G);
  }
}

TEST(VerifierTest, ConvTransposeOutputShapeShorterThanTheSpatialDims) {
  // Twin: one dim for two spatial ones (the fuzzer found it indexing
  // before the vector's start).
  auto G = parse(R"(graph "g" opset 17 {
  input %x : f32[1,1,3,3]
  const %w : f32[1,2,3,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9]
  %y = ConvTranspose(%x, %w) {output_shape = [1], strides = [3, 2]} : f32[1,2,7,8] @"ct"
  output %y
})");
  expectInvalid(*G, "output_shape has 1 dims for 2 spatial ones");
}

TEST(VerifierTest, SplitSizesSumToTheDim) {
  auto G = parse(R"(graph "g" opset 17 {
  input %x : f32[2,4]
  const %sizes : i64[2] = [1, 3]
  %a, %b = Split(%x, %sizes) {axis = 1} : f32[2,1], f32[2,3] @"split"
  output %a
  output %b
})");
  expectValid(*G);
}

TEST(VerifierTest, SplitSizesThatOverflowAreRefused) {
  // Twin: sizes whose sum overflows int64 (the fuzzer found the overflow).
  auto G = parse(R"(graph "g" opset 17 {
  input %x : f32[2,4]
  const %sizes : i64[2] = [72036854775808, 9223372036854775807]
  %a, %b = Split(%x, %sizes) {axis = 1} : f32[2,1], f32[2,3] @"split"
  output %a
  output %b
})");
  expectInvalid(*G, "split sizes sum past 17179869184");
}

TEST(VerifierTest, WindowAttributesPastTheDimLimitAreRefused) {
  // Hostile kernel/stride/dilation/pad/group values are refused before the
  // size arithmetic could overflow; their twin (ordinary values) is valid.
  auto Conv = [](const std::string &Attrs, const char *Out) {
    return parse(std::string(R"(graph "g" opset 17 {
  input %x : f32[1,1,5,5]
  const %w : f32[1,1,3,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9]
  %y = Conv(%x, %w, none) {)") +
                 Attrs + R"(} : )" + Out + R"( @"c"
  output %y
})");
  };
  auto Ok = Conv("dilations = [1, 1], pads = [1, 1, 1, 1], strides = [1, 1]",
                 "f32[1,1,5,5]");
  expectValid(*Ok);
  for (const char *Attrs :
       {"dilations = [4611686018427387904, 1]",
        "strides = [9223372036854775807, 1]",
        "pads = [9223372036854775807, 0, 9223372036854775807, 0]",
        "group = 4611686018427387904"}) {
    SCOPED_TRACE(Attrs);
    auto Bad = Conv(Attrs, "f32[1,1,3,3]");
    ASSERT_TRUE(Bad);
    std::string Msg = verify(*Bad);
    EXPECT_NE(Msg.find("limit"), std::string::npos) << Msg;
  }
}

TEST(VerifierTest, ConvTransposeOutputPastTheDimLimitIsRefused) {
  // Twin of ConvTransposeOutputShapeGivesTheSpatialDims: strides that
  // would overflow the output size.
  auto G = parse(R"(graph "g" opset 17 {
  input %x : f32[1,1,3,3]
  const %w : f32[1,2,3,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9]
  %y = ConvTranspose(%x, %w) {strides = [17179869184, 2]} : f32[1,2,7,8] @"ct"
  output %y
})");
  expectInvalid(*G, "output size past the dim limit");
}

TEST(VerifierTest, AttentionResultTypeFollowsTheForm) {
  auto G = parse(R"(graph "g" opset 17 {
  input %q : f16[2,7,64]
  input %k : f16[2,9,32]
  input %v : f16[2,9,32]
  input %m : bool[2,1,7,9]
  %y = Attention(%q, %k, %v, %m) {kv_num_heads = 2, q_num_heads = 4} : f16[2,7,64] @"a"
  output %y
})");
  expectValid(*G);
}

TEST(VerifierTest, AttentionWithIndivisibleHeadsIsRejected) {
  // Twin of the test above: 3 query heads do not share 2 key/value heads.
  auto G = parse(R"(graph "g" opset 17 {
  input %q : f16[2,7,48]
  input %k : f16[2,9,32]
  input %v : f16[2,9,32]
  %y = Attention(%q, %k, %v) {kv_num_heads = 2, q_num_heads = 3} : f16[2,7,48] @"a"
  output %y
})");
  expectInvalid(*G, "not a multiple of the key/value heads");
}
