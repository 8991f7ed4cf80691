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
  /// A per-output-channel (conv) / per-column (matmul) vector the library
  /// adds, or null.
  const Value *Bias = nullptr;
  /// A tensor of the result's shape the library adds (cuBLASLt's C with
  /// beta 1, cuDNN's z with alpha2 1), or null.
  const Value *Residual = nullptr;
  EpilogueActivation Activation = EpilogueActivation::None;
  /// Body nodes the library call computes besides the anchor, in order.
  std::vector<const Node *> Absorbed;
  /// The body value the library call writes (the anchor's result, or the
  /// last absorbed node's).
  const Value *LibraryResult = nullptr;
  /// Body nodes left for one generated kernel, in body order (may be
  /// empty).
  std::vector<const Node *> Rest;
  /// For reports: "cuDNN conv + bias + residual + ReLU".
  std::string Description;
};

/// The split of a FusedGroup node of kind contraction.
LibraryEpilogue matchLibraryEpilogue(const Node &Group);

} // namespace solder

#endif
