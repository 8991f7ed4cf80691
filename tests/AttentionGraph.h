//===- AttentionGraph.h - One attention block as IR text, for tests -*- C++
//-*-===//
//
// Shared by the strided-view, epilogue-fusion and plan tests: the layout
// ops around attention's batched matmuls in the form exporters produce.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TESTS_ATTENTIONGRAPH_H
#define SOLDER_TESTS_ATTENTIONGRAPH_H

#include <string>
#include <vector>

namespace solder {
namespace test {

/// One attention block of Batch sequences (5 tokens, 2 heads of 4): Q, K
/// and V sliced out of a packed projection and split into heads, scaled
/// scores, softmax, context merged back to [Batch, 5, 8].
inline std::string attentionGraphText(int Batch) {
  std::string T = R"(graph "g" opset 17 {
  input %qkv : f32[B,5,24]
  const %s0 : i64[1] = [0]
  const %s1 : i64[1] = [8]
  const %s2 : i64[1] = [16]
  const %s3 : i64[1] = [24]
  const %ax : i64[1] = [2]
  const %hs : i64[4] = [B, 5, 2, 4]
  const %ms : i64[3] = [B, 5, 8]
  const %scale : f32[] = [0.5]
  %q = Slice(%qkv, %s0, %s1, %ax) : f32[B,5,8] @"slice_q"
  %k = Slice(%qkv, %s1, %s2, %ax) : f32[B,5,8] @"slice_k"
  %v = Slice(%qkv, %s2, %s3, %ax) : f32[B,5,8] @"slice_v"
  %q4 = Reshape(%q, %hs) : f32[B,5,2,4] @"reshape_q"
  %k4 = Reshape(%k, %hs) : f32[B,5,2,4] @"reshape_k"
  %v4 = Reshape(%v, %hs) : f32[B,5,2,4] @"reshape_v"
  %qt = Transpose(%q4) {perm = [0, 2, 1, 3]} : f32[B,2,5,4] @"transpose_q"
  %kt = Transpose(%k4) {perm = [0, 2, 3, 1]} : f32[B,2,4,5] @"transpose_k"
  %vt = Transpose(%v4) {perm = [0, 2, 1, 3]} : f32[B,2,5,4] @"transpose_v"
  %s = MatMul(%qt, %kt) : f32[B,2,5,5] @"scores"
  %ss = Mul(%s, %scale) : f32[B,2,5,5] @"scale"
  %p = Softmax(%ss) {axis = -1} : f32[B,2,5,5] @"softmax"
  %o = MatMul(%p, %vt) : f32[B,2,5,4] @"context"
  %ot = Transpose(%o) {perm = [0, 2, 1, 3]} : f32[B,5,2,4] @"merge_t"
  %r = Reshape(%ot, %ms) : f32[B,5,8] @"merge_r"
  output %r
})";
  std::string B = std::to_string(Batch);
  for (size_t P = T.find("[B,"); P != std::string::npos; P = T.find("[B,"))
    T.replace(P + 1, 1, B);
  return T;
}

/// The members of attentionGraphText's two matmul groups.
inline std::vector<std::string> attentionScoresMembers() {
  return {"slice_q",     "slice_k",     "reshape_q", "reshape_k",
          "transpose_q", "transpose_k", "scores",    "scale"};
}
inline std::vector<std::string> attentionContextMembers() {
  return {"slice_v", "reshape_v", "transpose_v",
          "context", "merge_t",   "merge_r"};
}

} // namespace test
} // namespace solder

#endif
