//===- LibraryEpilogue.h - What a library call absorbs of a group -*- C++
//-*-===//
//
// A contraction group (ir/FusedGroup.h) is a Conv/ConvTranspose/MatMul/Gemm
// anchor followed by a chain of elementwise ops. Its plan runs the anchor
// as one cuBLASLt or cuDNN call that also does what the library's fused
// epilogue can (bias, residual, activation), then, if anything is left, ONE
// generated kernel for the rest of the chain. This file decides the split;
// code generation (the rest kernel) and the plan builder (the library
// call's configuration) both ask it, so they always agree.
//
// What each library computes, and so the longest chain prefix it can take:
//
//   cuBLASLt  D = act(alpha * A B + beta * C + bias)
//             [Mul/Div by a constant scalar] then {bias Add, residual Add}
//             (each at most once, either order) then [Relu | tanh Gelu]
//   cuDNN     y = act(conv(x, w) + z + bias)   (BiasActivationForward)
//             {per-channel bias Add (unless the Conv has its own bias),
//             residual Add} then [Relu]
//   ConvTranspose: only a per-channel bias Add (run as the bias kernel that
//             also serves its own bias), and only without its own bias.
//
// A convolution group may instead run whole as one cuDNN operation graph
// (ConvGraphEpilogue.h), where tuning measured that faster.
//
// A "bias" is a vector broadcast along the last dim (matmul: one value per
// column) or along the channel dim (conv); a "residual" has exactly the
// result's shape. erf Gelu is not cuBLASLt's GELU (a tanh approximation,
// at most 4.7e-4 off): in f32 it stays in the rest; in f16/bf16, where that
// is below the type's own rounding near 1, the library takes it. f64 takes
// no epilogue.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_CODEGEN_LIBRARYEPILOGUE_H
#define SOLDER_CODEGEN_LIBRARYEPILOGUE_H

#include "ir/Graph.h"
#include <string>
#include <vector>

namespace solder {

enum class EpilogueActivation : uint8_t { None, Relu, GeluTanh };

/// The split of one contraction group. All values and nodes are in the
/// group's body.
struct LibraryEpilogue {
  /// The contraction the library runs.
  const Node *Anchor = nullptr;
  /// Scale of the contraction's product (cuBLASLt alpha), from a Mul/Div by
  /// a constant scalar right after the anchor; multiplies a Gemm's own
  /// alpha.
  float Alpha = 1.0f;
  /// A per-output-channel (conv) / per-column (matmul) vector the library
  /// adds, or null. Not the Conv's or Gemm's own bias operand.
  const Value *Bias = nullptr;
  /// A tensor of the result's shape the library adds (cuBLASLt's C with
  /// beta 1, cuDNN's z with alpha2 1), or null.
  const Value *Residual = nullptr;
  EpilogueActivation Activation = EpilogueActivation::None;
  /// Layout ops (ir/StridedView.h) between the group's operands and the
  /// anchor's: the library reads its operands through them as strided
  /// views (a matmul anchor only).
  std::vector<const Node *> Prologue;
  /// Layout ops from LibraryResult to the group's result: the library
  /// writes its result through them (Rest is empty then).
  std::vector<const Node *> ResultLayout;
  /// Body nodes the library call computes besides the anchor, in order.
  std::vector<const Node *> Absorbed;
  /// The body value the library call writes (the anchor's result, or the
  /// last absorbed node's).
  const Value *LibraryResult = nullptr;
  /// Body nodes left for one generated kernel, in body order (may be
  /// empty).
  std::vector<const Node *> Rest;
  /// For reports: "cuDNN conv+bias+ReLU (cudnnConvolutionBiasActivation
  /// Forward)".
  std::string Description;
};

/// The split of a FusedGroup node of kind contraction. A group without a
/// contraction gives a null Anchor and every node in Rest.
LibraryEpilogue matchLibraryEpilogue(const Node &Group);

/// True when a Gemm's own C operand is added by cuBLASLt's BIAS epilogue (a
/// row vector with beta 1), false when it takes cuBLASLt's C (or is absent).
/// The plan builder and the matcher share this so they agree on which
/// slot is still free.
bool gemmCIsBiasVector(const Node &Gemm);
/// True when a Gemm has a C operand that contributes (beta != 0).
bool gemmHasC(const Node &Gemm);

} // namespace solder

#endif
