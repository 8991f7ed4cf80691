//===- ReduceArgEmitterTest.cpp - ReduceMin..SumSquare, ArgMax/ArgMin -----===//
//
// The row kernels of the Reduce* ops added after Sum/Mean/Max (their
// start value, fold, combiner and final step, LogSumExp's max shift) and
// the one-thread-per-line ArgMax/ArgMin kernel (its baked mode and tie
// rule); every one compiled with NVRTC for each dtype it accepts, and
// refused clearly for the others.
//
//===----------------------------------------------------------------------===//
#include "tests/codegen/EmitterTestUtils.h"

using namespace solder;
using namespace solder::testing;

namespace {

const char *const NewReduceOps[] = {
    "ReduceMin",    "ReduceProd",      "ReduceL1",       "ReduceL2",
    "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
const char *const FloatTypes[] = {"f32", "f16", "bf16", "f64"};
const char *const IntTypes[] = {"i8", "u8", "i32", "u32", "i64", "u64"};

bool floatOnly(llvm::StringRef Op) {
  return Op == "ReduceL2" || Op == "ReduceLogSum" || Op == "ReduceLogSumExp";
}

std::string reduceGraph(const std::string &Op, const std::string &T,
                        const std::string &Dims, const std::string &Axes,
                        const std::string &Name = "r") {
  return "  input %x : " + T + "[" + Dims + "]\n  const %a : i64[" +
         std::to_string(std::count(Axes.begin(), Axes.end(), ',') + 1) +
         "] = [" + Axes + "]\n  %y = " + Op + "(%x, %a) {keepdims = 0} @\"" +
         Name + "\"\n  output %y";
}

std::string sourceOf(const std::string &Body) {
  auto G = parseBody(Body);
  return G ? onlyKernel(*G).Source : std::string();
}

TEST(ReduceMoreEmitter, EachKindFoldsAndFinishesItsOwnWay) {
  std::string Min = sourceOf(reduceGraph("ReduceMin", "f32", "4,8", "1"));
  EXPECT_TRUE(contains(Min, "float acc = __int_as_float(0x7f800000);")) << Min;
  EXPECT_TRUE(contains(Min, "acc = solder_min(acc, v);")) << Min;
  std::string Prod = sourceOf(reduceGraph("ReduceProd", "i32", "4,8", "1"));
  EXPECT_TRUE(contains(Prod, "int acc = (1);")) << Prod;
  EXPECT_TRUE(contains(Prod, "acc *= v;")) << Prod;
  std::string L1 = sourceOf(reduceGraph("ReduceL1", "f32", "4,8", "1"));
  EXPECT_TRUE(contains(L1, "acc += solder_abs(v);")) << L1;
  std::string L2 = sourceOf(reduceGraph("ReduceL2", "f32", "4,8", "1"));
  EXPECT_TRUE(contains(L2, "acc += v * v;")) << L2;
  EXPECT_TRUE(contains(L2, "acc = sqrtf(acc);")) << L2;
  std::string Sq = sourceOf(reduceGraph("ReduceSumSquare", "f64", "4,8", "1"));
  EXPECT_TRUE(contains(Sq, "acc += v * v;")) << Sq;
  EXPECT_FALSE(contains(Sq, "sqrt")) << Sq;
  std::string Log = sourceOf(reduceGraph("ReduceLogSum", "f64", "4,8", "1"));
  EXPECT_TRUE(contains(Log, "acc = log(acc);")) << Log;
}

TEST(ReduceMoreEmitter, LogSumExpShiftsByTheRowMaximum) {
  // A 64-element row: one warp, so both passes combine across lanes.
  std::string S = sourceOf(reduceGraph("ReduceLogSumExp", "f32", "3,64", "-1"));
  EXPECT_TRUE(contains(S, "mx = solder_max(mx, ")) << S;
  EXPECT_TRUE(contains(S, "mx = solder_warp_reduce(mx, SolderMax());")) << S;
  EXPECT_TRUE(contains(S, "const float shift = isinf(mx) ? (0x0p+0f) : mx;"))
      << S;
  EXPECT_TRUE(contains(S, "acc += expf(v - shift);")) << S;
  EXPECT_TRUE(contains(S, "acc = shift + logf(acc);")) << S;
  EXPECT_LT(S.find("SolderMax()"), S.find("acc = shift")) << S;
}

TEST(ReduceMoreEmitter, CompilesForEveryDType) {
  std::vector<std::string> Bodies;
  for (const char *Op : NewReduceOps) {
    for (const char *T : FloatTypes) {
      // Short rows (one thread), a warp per row, and a block per row.
      Bodies.push_back(reduceGraph(Op, T, "4,6", "1"));
      Bodies.push_back(reduceGraph(Op, T, "2,100,3", "0,2"));
      Bodies.push_back(reduceGraph(Op, T, "2,2048", "1"));
    }
    if (!floatOnly(Op))
      for (const char *T : IntTypes)
        Bodies.push_back(reduceGraph(Op, T, "5,40", "1"));
  }
  expectEachCompiles(Bodies);
}

TEST(ReduceMoreEmitter, RefusesIntegerRootsAndLogsAndBool) {
  for (const char *Op : NewReduceOps) {
    if (!floatOnly(Op))
      continue;
    auto G = parseBody(reduceGraph(Op, "i32", "4,6", "1", "lg"));
    ASSERT_TRUE(G);
    std::string E = emitErrorOf(*G);
    EXPECT_TRUE(contains(E, std::string(Op) + " node 'lg'")) << E;
    EXPECT_TRUE(contains(E, "does not support " + std::string(Op) + " on i32"))
        << E;
  }
  auto B = parseBody(reduceGraph("ReduceMin", "bool", "4,6", "1"));
  ASSERT_TRUE(B);
  EXPECT_TRUE(contains(emitErrorOf(*B), "does not support ReduceMin on bool"));
}

std::string argGraph(const std::string &Op, const std::string &T,
                     const std::string &Dims, const std::string &Attrs) {
  return "  input %x : " + T + "[" + Dims + "]\n  %y = " + Op + "(%x) {" +
         Attrs + "} @\"am\"\n  output %y";
}

TEST(ArgReduceEmitter, OneThreadWalksEachLineWithItsTieRule) {
  std::string S =
      sourceOf(argGraph("ArgMax", "f32", "4,1000,3", "axis = 1, keepdims = 0"));
  // 12 lines of 1000 elements, 3 apart; no cross-thread combine.
  EXPECT_TRUE(contains(S, "row < (idx_t)cnt0;")) << S;
  EXPECT_TRUE(contains(S, "const long long cnt0)")) << S;
  EXPECT_TRUE(contains(S, "j < 1000; j += 1)")) << S;
  std::string Body = S.substr(S.find("__global__"));
  EXPECT_FALSE(contains(Body, "_reduce(")) << S;
  EXPECT_TRUE(contains(S, "solder_arg_better<true, false>(v, best)")) << S;
  EXPECT_TRUE(contains(S, "best_at = (long long)j;")) << S;
  std::string L = sourceOf(
      argGraph("ArgMin", "i64", "5,7", "axis = -1, select_last_index = 1"));
  EXPECT_TRUE(contains(L, "solder_arg_better<false, true>(v, best)")) << L;
}

TEST(ArgReduceEmitter, CompilesForEveryDType) {
  std::vector<std::string> Bodies;
  for (const char *Op : {"ArgMax", "ArgMin"}) {
    for (const char *T : FloatTypes)
      Bodies.push_back(argGraph(Op, T, "3,50", "axis = 1"));
    for (const char *T : IntTypes)
      Bodies.push_back(
          argGraph(Op, T, "6,2,5", "axis = 0, select_last_index = 1"));
  }
  expectEachCompiles(Bodies);
}

TEST(ArgReduceEmitter, RefusesAnEmptyAxis) {
  auto G = parseBody(argGraph("ArgMax", "f32", "3,0", "axis = 1"));
  ASSERT_TRUE(G);
  std::string E = emitErrorOf(*G);
  EXPECT_TRUE(contains(E, "ArgMax node 'am'")) << E;
  EXPECT_TRUE(contains(E, "empty axis")) << E;
}

} // namespace
