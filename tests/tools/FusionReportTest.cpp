//===- FusionReportTest.cpp - The --fusion-report of compile and dump-ir --===//
//
// Builds reports from hand-written IR holding FusedGroup nodes (the fusion
// passes need not exist for these) and checks the text and JSON forms and
// which decisions are listed as rejected.
//
//===----------------------------------------------------------------------===//
#include "tools/FusionReport.h"
#include "ir/FusedGroup.h"
#include "ir/Parser.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

using namespace solder;

namespace {

std::string str(llvm::Optional<llvm::StringRef> S) {
  return S ? S->str() : "<missing>";
}
int64_t num(llvm::Optional<int64_t> N) { return N ? *N : -999; }

Node *nodeNamed(Graph &G, llvm::StringRef Name) {
  for (auto &N : G.nodes())
    if (N->name() == Name)
      return N.get();
  return nullptr;
}

/// Two groups outlined out of order (id 7 first in the graph, then id 2),
/// and one node left alone.
std::unique_ptr<Graph> twoGroups() {
  auto G = parseGraph(R"(
graph "g" opset 17 {
  input %x : f32[2,3]
  input %b : f32[3]
  const %half : f32[] = [0.5]
  %a = Add(%x, %b) : f32[2,3] @"add"
  %m = Mul(%a, %half) : f32[2,3] @"mul"
  %r = Relu(%m) : f32[2,3] @"relu"
  %s = Sigmoid(%r) : f32[2,3] @"sig"
  %n = Neg(%s) : f32[2,3] @"neg"
  %t = Tanh(%a) : f32[2,3] @"tanh"
  output %n
  output %t
}
)");
  EXPECT_TRUE(bool(G)) << (G ? "" : llvm::toString(G.takeError()));
  if (!G)
    return nullptr;
  Graph &Gr = **G;
  auto G7 = outlineFusedGroup(Gr, {nodeNamed(Gr, "mul"), nodeNamed(Gr, "relu")},
                              GroupKind::Loop, 7);
  EXPECT_TRUE(bool(G7)) << (G7 ? "" : llvm::toString(G7.takeError()));
  auto G2 = outlineFusedGroup(Gr, {nodeNamed(Gr, "sig"), nodeNamed(Gr, "neg")},
                              GroupKind::Loop, 2);
  EXPECT_TRUE(bool(G2)) << (G2 ? "" : llvm::toString(G2.takeError()));
  return std::move(*G);
}

std::vector<DecisionRecord> decisions() {
  return {
      {"loop-fusion", "Tanh node 'tanh'", "tanh", false,
       "its operand has a second user outside the group"},
      {"loop-fusion", "Mul node 'mul'", "mul", true, ""},
      // Not a fusion pass: not the report's business.
      {"constant-folding", "Add node 'add'", "add", false, "not constant"},
      // The same rejection again in a later fixpoint round.
      {"loop-fusion", "Tanh node 'tanh'", "tanh", false,
       "its operand has a second user outside the group"},
      {"gelu-recognition", "Mul node 'mul'", "mul", false,
       "no erf in the pattern"},
  };
}

TEST(FusionReport, GroupsByIdWithMembers) {
  auto G = twoGroups();
  ASSERT_TRUE(G);
  FusionReport R = fusionReportFromGraph(*G, decisions(), "not planned");
  ASSERT_EQ(R.Groups.size(), 2u);
  EXPECT_EQ(R.Groups[0].Id, 2);
  EXPECT_EQ(R.Groups[0].Members, (std::vector<std::string>{"sig", "neg"}));
  EXPECT_EQ(R.Groups[1].Id, 7);
  EXPECT_EQ(R.Groups[1].Kind, "loop");
  EXPECT_EQ(R.Groups[1].RunsAs, "not planned");
}

TEST(FusionReport, NoGroupsInAnUnfusedGraph) {
  auto G = parseGraph(R"(
graph "g" opset 17 {
  input %x : f32[2]
  %r = Relu(%x) : f32[2] @"relu"
  output %r
}
)");
  ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
  FusionReport R = fusionReportFromGraph(**G, {}, "x");
  EXPECT_TRUE(R.Groups.empty());
  EXPECT_TRUE(R.Rejected.empty());
  std::string Text;
  llvm::raw_string_ostream OS(Text);
  printFusionReport(OS, R);
  EXPECT_EQ(OS.str(), "0 fused groups, 0 candidates not fused\n");
}

TEST(FusionReport, RejectedListsFusionPassesOnceInOrder) {
  std::vector<DecisionRecord> R = rejectedFusions(decisions());
  ASSERT_EQ(R.size(), 2u);
  EXPECT_EQ(R[0].Pass, "loop-fusion");
  EXPECT_EQ(R[0].OnnxName, "tanh");
  EXPECT_EQ(R[1].Pass, "gelu-recognition");
  EXPECT_TRUE(isFusionPass("epilogue-fusion"));
  EXPECT_TRUE(isFusionPass("batchnorm-folding"));
  EXPECT_TRUE(isFusionPass("norm-recognition"));
  EXPECT_FALSE(isFusionPass("constant-folding"));
  EXPECT_FALSE(isFusionPass("dead-code-elimination"));
}

TEST(FusionReport, TextForm) {
  auto G = twoGroups();
  ASSERT_TRUE(G);
  FusionReport R = fusionReportFromGraph(*G, decisions(), "not planned");
  std::string Text;
  llvm::raw_string_ostream OS(Text);
  printFusionReport(OS, R);
  EXPECT_EQ(OS.str(),
            "2 fused groups, 2 candidates not fused\n"
            "group 2  loop  not planned  sig, neg\n"
            "group 7  loop  not planned  mul, relu\n"
            "not fused: Tanh node 'tanh' (loop-fusion): its operand has a "
            "second user outside the group\n"
            "not fused: Mul node 'mul' (gelu-recognition): no erf in the "
            "pattern\n");
}

TEST(FusionReport, JsonForm) {
  auto G = twoGroups();
  ASSERT_TRUE(G);
  FusionReport R = fusionReportFromGraph(*G, decisions(), "not planned");
  R.Groups[0].Steps.push_back({3, "kernel solder_3_fused", ""});
  std::string Text;
  llvm::raw_string_ostream OS(Text);
  OS << fusionReportToJson(R);
  llvm::Expected<llvm::json::Value> V = llvm::json::parse(OS.str());
  ASSERT_TRUE(bool(V)) << llvm::toString(V.takeError());
  const llvm::json::Object *Root = V->getAsObject();
  ASSERT_TRUE(Root);
  const llvm::json::Array *Groups = Root->getArray("groups");
  ASSERT_TRUE(Groups);
  ASSERT_EQ(Groups->size(), 2u);
  const llvm::json::Object *G0 = (*Groups)[0].getAsObject();
  EXPECT_EQ(num(G0->getInteger("id")), 2);
  EXPECT_EQ(str(G0->getString("kind")), "loop");
  EXPECT_EQ(str(G0->getString("runs_as")), "not planned");
  ASSERT_TRUE(G0->getArray("members"));
  EXPECT_EQ(str((*G0->getArray("members"))[1].getAsString()), "neg");
  ASSERT_EQ(G0->getArray("steps")->size(), 1u);
  EXPECT_EQ(num((*G0->getArray("steps"))[0].getAsObject()->getInteger("index")),
            3);
  const llvm::json::Array *Rejected = Root->getArray("rejected");
  ASSERT_TRUE(Rejected);
  ASSERT_EQ(Rejected->size(), 2u);
  const llvm::json::Object *R0 = (*Rejected)[0].getAsObject();
  EXPECT_EQ(str(R0->getString("pass")), "loop-fusion");
  EXPECT_EQ(str(R0->getString("onnx_name")), "tanh");
  EXPECT_EQ(str(R0->getString("node")), "Tanh node 'tanh'");
}

TEST(FusionReport, LayoutTransposesAndLibraryChoicesAreListed) {
  auto G = twoGroups();
  ASSERT_TRUE(G);
  std::vector<DecisionRecord> D = decisions();
  D.push_back({"conv-layout", "Transpose node 'x.nhwc'", "", false,
               "layout boundary: feeds Conv node 'conv1'"});
  // A conv-layout note that is not a boundary (a conv left NCHW): not
  // listed.
  D.push_back({"conv-layout", "Conv node 'c'", "c", false,
               "layout auto keeps f32 convolutions in NCHW"});
  FusionReport R = fusionReportFromGraph(*G, D, "not planned");
  ASSERT_EQ(R.LayoutBoundaries.size(), 1u);
  R.Groups[0].Steps.push_back({3, "conv", "cuDNN NHWC, f16 tensor-op math"});
  R.Groups[0].Steps.push_back({4, "kernel solder_4", ""});
  std::string Text;
  llvm::raw_string_ostream OS(Text);
  printFusionReport(OS, R);
  EXPECT_EQ(OS.str(),
            "2 fused groups, 2 candidates not fused, 1 layout transpose\n"
            "group 2  loop  not planned  sig, neg\n"
            "    step 3: cuDNN NHWC, f16 tensor-op math\n"
            "group 7  loop  not planned  mul, relu\n"
            "not fused: Tanh node 'tanh' (loop-fusion): its operand has a "
            "second user outside the group\n"
            "not fused: Mul node 'mul' (gelu-recognition): no erf in the "
            "pattern\n"
            "layout: Transpose node 'x.nhwc': layout boundary: feeds Conv "
            "node 'conv1'\n");
  std::string Json;
  llvm::raw_string_ostream JS(Json);
  JS << fusionReportToJson(R);
  EXPECT_NE(JS.str().find("\"layout_boundaries\":[{\"node\":\"Transpose "
                          "node 'x.nhwc'\""),
            std::string::npos)
      << JS.str();
  EXPECT_NE(JS.str().find("\"library\":\"cuDNN NHWC, f16 tensor-op math\""),
            std::string::npos)
      << JS.str();
}

} // namespace
