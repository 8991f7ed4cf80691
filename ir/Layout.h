//===- Layout.h - Channels-last (NHWC) convolutions and pools ---*- C++ -*-===//
//
// ONNX's Conv, MaxPool and AveragePool are channels-first (NCHW). solder
// gives them an optional attribute `layout = "NHWC"` (2-D only): the input
// and result are [N, H, W, C] and a Conv's weights are [M, kH, kW, C/group]
// (cuDNN's KRSC filter layout); every other attribute keeps its ONNX
// meaning. The layout of any other value is explicit in the graph: a
// Transpose with perm [0, 2, 3, 1] or [0, 3, 1, 2] where a channels-last
// region meets channels-first ops (see passes/ConvLayout.h). Shape
// inference checks the attribute (so the verifier does), and the reference
// executor runs such a node by transposing around its NCHW kernel.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_IR_LAYOUT_H
#define SOLDER_IR_LAYOUT_H

#include "ir/Graph.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

namespace solder {

/// The attribute's name and values.
constexpr const char *LayoutAttrName = "layout";
constexpr const char *NchwLayout = "NCHW";
constexpr const char *NhwcLayout = "NHWC";

/// Transpose perms between the two layouts (rank 4).
constexpr int64_t ToNhwcPerm[4] = {0, 2, 3, 1};
constexpr int64_t ToNchwPerm[4] = {0, 3, 1, 2};

/// Whether K takes the layout attribute (Conv, MaxPool, AveragePool).
bool takesLayout(OpKind K);
/// Whether N is one of those with layout = "NHWC".
bool isNhwc(const Node &N);
/// The channel axis of N's input and result: 3 when NHWC, else 1.
unsigned channelAxis(const Node &N);
/// Checks N's layout attribute for an input of rank Rank: absent, "NCHW",
/// or "NHWC" with rank 4. Sets Nhwc.
llvm::Error checkLayout(const Node &N, unsigned Rank, bool &Nhwc);

/// The perm of Transpose node N whose operand has rank Rank (ONNX's
/// default when the attribute is absent: the dims reversed).
llvm::SmallVector<int64_t, 6> transposePerm(const Node &N, unsigned Rank);
/// Dims as ONNX Transpose permutes them: Out[I] = In[Perm[I]].
template <typename T>
llvm::SmallVector<T, 6> permuteDims(llvm::ArrayRef<T> In,
                                    llvm::ArrayRef<int64_t> Perm) {
  llvm::SmallVector<T, 6> Out;
  for (int64_t P : Perm)
    Out.push_back(In[P]);
  return Out;
}
/// The inverse permutation.
llvm::SmallVector<int64_t, 6> invertPerm(llvm::ArrayRef<int64_t> Perm);
/// Perm applied after First: Transpose(Transpose(x, First), Second) is
/// Transpose(x, composePerms(First, Second)).
llvm::SmallVector<int64_t, 6> composePerms(llvm::ArrayRef<int64_t> First,
                                           llvm::ArrayRef<int64_t> Second);
bool isIdentityPerm(llvm::ArrayRef<int64_t> Perm);

} // namespace solder

#endif
