//===- FusedGroupTest.cpp - Outlining, printing and running fused groups --===//
#include "ir/FusedGroup.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "gtest/gtest.h"

using namespace solder;

namespace {

const char *Chain = R"(
graph "g" opset 17 {
  input %x : f32[2,3]
  input %b : f32[3]
  const %half : f32[] = [0.5]
  %a = Add(%x, %b) : f32[2,3] @"add"
  %m = Mul(%a, %half) : f32[2,3] @"mul"
  %r = Relu(%m) : f32[2,3] @"relu"
  %s = Sigmoid(%a) : f32[2,3] @"sig"
  output %r
  output %s
}
)";

std::unique_ptr<Graph> parse(llvm::StringRef Text) {
  auto G = parseGraph(Text);
  EXPECT_TRUE(bool(G)) << (G ? "" : llvm::toString(G.takeError()));
  return G ? std::move(*G) : nullptr;
}

Node *nodeNamed(Graph &G, llvm::StringRef Name) {
  for (auto &N : G.nodes())
    if (N->name() == Name)
      return N.get();
  return nullptr;
}

TEST(FusedGroup, OutlinePrintsParsesAndVerifies) {
  auto G = parse(Chain);
  ASSERT_TRUE(G);
  auto Group = outlineFusedGroup(
      *G, {nodeNamed(*G, "mul"), nodeNamed(*G, "relu")}, GroupKind::Loop, 4);
  ASSERT_TRUE(bool(Group)) << llvm::toString(Group.takeError());
  EXPECT_FALSE(bool(verifyGraph(*G)));
  std::string Text = graphToString(*G);
  // The scalar constant is cloned into the body; the result keeps its name.
  EXPECT_NE(Text.find("%r = FusedGroup(%a) {id = 4, kind = \"loop\", members "
                      "= [\"mul\", \"relu\"]} : f32[2,3] body graph \"g4\""),
            std::string::npos)
      << Text;
  EXPECT_NE(Text.find("const %half : f32[] = [0.5]"), std::string::npos);
  auto Again = parse(Text);
  ASSERT_TRUE(Again);
  EXPECT_EQ(graphToString(*Again), Text);
  EXPECT_FALSE(bool(verifyGraph(*Again)));
  GroupInfo Info = groupInfo(**Group);
  EXPECT_EQ(Info.Id, 4);
  EXPECT_EQ(Info.Kind, GroupKind::Loop);
  EXPECT_EQ(Info.Members, (std::vector<std::string>{"mul", "relu"}));
}

TEST(FusedGroup, IntermediateUsedOutsideBecomesAResult) {
  auto G = parse(Chain);
  ASSERT_TRUE(G);
  auto Group = outlineFusedGroup(
      *G, {nodeNamed(*G, "add"), nodeNamed(*G, "mul")}, GroupKind::Loop, 0);
  ASSERT_TRUE(bool(Group)) << llvm::toString(Group.takeError());
  EXPECT_EQ((*Group)->numResults(), 2u); // %a (read by sig) and %m
  EXPECT_FALSE(bool(verifyGraph(*G)));
}

TEST(FusedGroup, InlineRestoresTheUnfusedGraph) {
  auto G = parse(Chain);
  ASSERT_TRUE(G);
  std::string Before = graphToString(*G);
  auto Group = outlineFusedGroup(
      *G, {nodeNamed(*G, "mul"), nodeNamed(*G, "relu")}, GroupKind::Loop, 1);
  ASSERT_TRUE(bool(Group));
  ASSERT_FALSE(bool(inlineFusedGroup(*G, *Group)));
  G->removeUnusedConstants();
  EXPECT_FALSE(bool(verifyGraph(*G)));
  // Same nodes and names in the same order (the cloned scalar gets a
  // fresh name).
  std::string After = graphToString(*G);
  EXPECT_NE(After.find("%r = Relu(%m) : f32[2,3] @\"relu\""), std::string::npos)
      << After;
}

TEST(FusedGroup, GroupsOutOfOrderAreSortedTopologically) {
  // The group's operand %s is computed after the first member in list
  // order; the group must move after it.
  auto G = parse(R"(
graph "g" opset 17 {
  input %x : f32[4]
  %a = Relu(%x) : f32[4] @"a"
  %s = Sigmoid(%x) : f32[4] @"s"
  %b = Add(%a, %s) : f32[4] @"b"
  output %b
}
)");
  ASSERT_TRUE(G);
  auto Group = outlineFusedGroup(*G, {nodeNamed(*G, "a"), nodeNamed(*G, "b")},
                                 GroupKind::Loop, 2);
  ASSERT_TRUE(bool(Group)) << llvm::toString(Group.takeError());
  EXPECT_FALSE(bool(verifyGraph(*G))) << graphToString(*G);
}

TEST(FusedGroup, VerifierRejectsABodyThatDoesNotMatch) {
  // Negative twin of the round trip: the body's output type differs from
  // the node's result.
  auto G = parseGraph(R"(
graph "g" opset 17 {
  input %x : f32[4]
  %y = FusedGroup(%x) {id = 0, kind = "loop", members = ["r"]} : f32[4] body graph "g0" opset 17 {
    input %x : f32[4]
    %y = Cast(%x) {to = 7} : i64[4] @"r"
    output %y
  }
  output %y
}
)");
  if (!G) {
    SUCCEED() << "refused by the parser: " << llvm::toString(G.takeError());
    return;
  }
  llvm::Error E = verifyGraph(**G);
  ASSERT_TRUE(bool(E));
  EXPECT_NE(llvm::toString(std::move(E)).find("inference gives"),
            std::string::npos);
}

TEST(FusedGroup, VerifierRejectsBadKind) {
  // The parser verifies what it reads.
  auto G = parseGraph(R"(
graph "g" opset 17 {
  input %x : f32[4]
  %y = FusedGroup(%x) {id = 0, kind = "blob", members = ["r"]} : f32[4] body graph "g0" opset 17 {
    input %x : f32[4]
    %y = Relu(%x) : f32[4] @"r"
    output %y
  }
  output %y
}
)");
  ASSERT_FALSE(bool(G));
  EXPECT_NE(llvm::toString(G.takeError()).find("kind must be"),
            std::string::npos);
}

} // namespace
