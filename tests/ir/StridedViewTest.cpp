//===- StridedViewTest.cpp - Layout ops as strided views, matmul geometry -===//
#include "ir/StridedView.h"
#include "ir/Parser.h"
#include "tests/AttentionGraph.h"
#include "gtest/gtest.h"

using namespace solder;

namespace {

std::unique_ptr<Graph> parse(llvm::StringRef Text) {
  auto G = parseGraph(Text);
  EXPECT_TRUE(bool(G)) << llvm::toString(G.takeError());
  return G ? std::move(*G) : nullptr;
}

Node *node(Graph &G, llvm::StringRef Name) {
  for (auto &N : G.nodes())
    if (N->name() == Name)
      return N.get();
  return nullptr;
}

using Dims = llvm::SmallVector<int64_t, 6>;

/// Q and K of two sequences sliced out of a packed QKV projection (5
/// tokens, 2 heads of 4) and split into heads, K transposed for Q K^T.
const std::string Attention = test::attentionGraphText(2);

std::optional<StridedView> through(Graph &G,
                                   std::initializer_list<const char *> Ops) {
  Node *First = node(G, *Ops.begin());
  std::optional<StridedView> V =
      StridedView::contiguous(First->operand(0)->type().staticDims());
  for (const char *Op : Ops)
    if (V)
      V = viewOfResult(*node(G, Op), *V);
  return V;
}

} // namespace

TEST(StridedView, ReshapeSplitsAndMergesContiguousRuns) {
  StridedView V = StridedView::contiguous({2, 3, 4});
  auto R = reshapeView(V, {6, 2, 2});
  ASSERT_TRUE(R);
  EXPECT_EQ(R->Strides, Dims({4, 2, 1}));
  auto U = reshapeView(V, {1, 2, 12, 1});
  ASSERT_TRUE(U);
  EXPECT_EQ(U->Strides[1], 12);
  EXPECT_EQ(U->Strides[2], 1);
}

TEST(StridedView, ReshapeRefusesToMergeAcrossATranspose) {
  // Negative twin: [2,3,4] transposed to [2,4,3] cannot merge its last two
  // dims without a copy.
  StridedView V = StridedView::contiguous({2, 3, 4});
  StridedView T;
  T.Dims = {2, 4, 3};
  T.Strides = {12, 1, 4};
  EXPECT_FALSE(reshapeView(T, {2, 12}));
  EXPECT_FALSE(reshapeView(T, {8, 3}));
  // Splitting a dim of it is fine.
  EXPECT_TRUE(reshapeView(T, {2, 2, 2, 3}));
  EXPECT_FALSE(reshapeView(V, {5, 5})); // element count differs
}

TEST(StridedView, HeadSplitOfPackedQkvIsAView) {
  auto G = parse(Attention);
  ASSERT_TRUE(G);
  auto Q = through(*G, {"slice_q", "reshape_q", "transpose_q"});
  ASSERT_TRUE(Q);
  EXPECT_EQ(Q->Offset, 0);
  EXPECT_EQ(Q->Dims, Dims({2, 2, 5, 4}));
  EXPECT_EQ(Q->Strides, Dims({120, 4, 24, 1}));
  auto K = through(*G, {"slice_k", "reshape_k", "transpose_k"});
  ASSERT_TRUE(K);
  EXPECT_EQ(K->Offset, 8);
  EXPECT_EQ(K->Strides, Dims({120, 4, 1, 24}));
  // Writing through a head merge: [B, h, S, d] into [B, S, h*d].
  auto T = parse(R"(graph "g" opset 17 {
  input %o : f32[2,2,5,4]
  const %ms : i64[3] = [2, 5, 8]
  %t = Transpose(%o) {perm = [0, 2, 1, 3]} : f32[2,5,2,4] @"merge_t"
  %r = Reshape(%t, %ms) : f32[2,5,8] @"merge_r"
  output %r
})");
  ASSERT_TRUE(T);
  auto D =
      viewOfOperand(*node(*T, "merge_r"), StridedView::contiguous({2, 5, 8}));
  ASSERT_TRUE(D);
  D = viewOfOperand(*node(*T, "merge_t"), *D);
  ASSERT_TRUE(D);
  EXPECT_EQ(D->Dims, Dims({2, 2, 5, 4}));
  EXPECT_EQ(D->Strides, Dims({40, 4, 8, 1}));
}

TEST(StridedView, AttentionScoresNeedPointerArraysOnlyAboveBatchOne) {
  auto G = parse(Attention);
  ASSERT_TRUE(G);
  auto Q = through(*G, {"slice_q", "reshape_q", "transpose_q"});
  auto K = through(*G, {"slice_k", "reshape_k", "transpose_k"});
  ASSERT_TRUE(Q && K);
  auto Geo = matmulGeometry(*Q, *K, StridedView::contiguous({2, 2, 5, 5}));
  ASSERT_TRUE(Geo);
  // cuBLASLt's A is K^T read transposed, its B is Q; D is [S, S] per batch.
  EXPECT_TRUE(Geo->TransA);
  EXPECT_FALSE(Geo->TransB);
  EXPECT_EQ(Geo->Lda, 24);
  EXPECT_EQ(Geo->Ldb, 24);
  EXPECT_EQ(Geo->Ldd, 5);
  EXPECT_EQ(Geo->OffsetA, 8);
  EXPECT_EQ(Geo->Batch, 4);
  ASSERT_TRUE(Geo->pointerArrays());
  EXPECT_EQ(Geo->BatchDims, (llvm::SmallVector<int64_t, 4>{2, 2}));
  EXPECT_EQ(Geo->BatchStrideB, (llvm::SmallVector<int64_t, 4>{120, 4}));
  EXPECT_EQ(Geo->BatchStrideD, (llvm::SmallVector<int64_t, 4>{50, 25}));

  // With one sequence the heads step evenly: a strided batch.
  StridedView Q1 = *Q, K1 = *K;
  Q1.Dims[0] = K1.Dims[0] = 1;
  auto Geo1 = matmulGeometry(Q1, K1, StridedView::contiguous({1, 2, 5, 5}));
  ASSERT_TRUE(Geo1);
  EXPECT_FALSE(Geo1->pointerArrays());
  EXPECT_EQ(Geo1->Batch, 2);
  EXPECT_EQ(Geo1->StrideB, 4);
  EXPECT_EQ(Geo1->StrideD, 25);
}

TEST(StridedView, ContiguousMatMulKeepsTheClassicLayout) {
  // [2,4,16] x [16,8]: the shared weight folds the batch into the rows.
  auto Geo = matmulGeometry(StridedView::contiguous({2, 4, 16}),
                            StridedView::contiguous({16, 8}),
                            StridedView::contiguous({2, 4, 8}));
  ASSERT_TRUE(Geo);
  EXPECT_FALSE(Geo->TransA || Geo->TransB);
  EXPECT_EQ(Geo->M, 8);
  EXPECT_EQ(Geo->N, 8);
  EXPECT_EQ(Geo->K, 16);
  EXPECT_EQ(Geo->Lda, 8);
  EXPECT_EQ(Geo->Ldb, 16);
  EXPECT_EQ(Geo->Ldd, 8);
  EXPECT_EQ(Geo->Batch, 1);
  // Batched both sides: a strided batch of 3.
  auto B = matmulGeometry(StridedView::contiguous({3, 5, 16}),
                          StridedView::contiguous({3, 16, 8}),
                          StridedView::contiguous({3, 5, 8}));
  ASSERT_TRUE(B);
  EXPECT_EQ(B->Batch, 3);
  EXPECT_EQ(B->StrideA, 128);
  EXPECT_EQ(B->StrideB, 80);
  EXPECT_EQ(B->StrideD, 40);
}

TEST(StridedView, ResultWithoutUnitColumnStrideIsRefused) {
  // Negative twin: cuBLASLt writes D column-major with ld; a D whose
  // columns are not contiguous (a transposed write) is not expressible.
  StridedView D;
  D.Dims = {4, 8};
  D.Strides = {1, 4};
  EXPECT_FALSE(matmulGeometry(StridedView::contiguous({4, 16}),
                              StridedView::contiguous({16, 8}), D));
  // Nor a batch dim that A has with another size.
  EXPECT_FALSE(matmulGeometry(StridedView::contiguous({2, 4, 16}),
                              StridedView::contiguous({3, 16, 8}),
                              StridedView::contiguous({3, 4, 8})));
}
