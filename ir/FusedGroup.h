//===- FusedGroup.h - Fused groups: nodes whose body is a sub-graph -*- C++
//-*-===//
//
// A fused group is one FusedGroup node whose body is the unfused sub-graph
// it replaces. Body input I stands for operand I and body output J for
// result J, with equal types. Constant scalars and small integer constants
// (shapes, axes, slice bounds: up to 64 elements) the members read are
// cloned into the body, so shape inference and generated code see their
// values; every other value the members read, constants included, is an
// operand. Attributes:
//
//   id       stable number of the group within its graph (fusion report,
//            --disable-fusion, kernel headers)
//   kind     "contraction" (Conv/MatMul/Gemm plus an epilogue), "loop"
//            (elementwise, broadcast and injective ops), "reduction" (one
//            reduction or row normalization plus prologue and epilogue)
//   members  the ONNX node names of the members, in body order
//
//   %y = FusedGroup(%x, %w, %b) {id = 3, kind = "contraction",
//          members = ["conv1", "relu1"]} : f32[1,8,4,4] body graph "g3" {
//     input %x ... input %w ... input %b ...
//     %c = Conv(%x, %w, %b) ... @"conv1"
//     %y = Relu(%c) ... @"relu1"
//     output %y
//   }
//
// The reference executor runs a group by running its body, so fused and
// unfused are the same computation on the CPU by construction.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_IR_FUSEDGROUP_H
#define SOLDER_IR_FUSEDGROUP_H

#include "ir/Graph.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include <optional>
#include <string>
#include <vector>

namespace solder {

enum class GroupKind : uint8_t { Contraction, Loop, Reduction };

llvm::StringRef groupKindName(GroupKind K);
std::optional<GroupKind> parseGroupKind(llvm::StringRef S);

/// The attributes of a FusedGroup node, typed.
struct GroupInfo {
  int64_t Id = -1;
  GroupKind Kind = GroupKind::Loop;
  std::vector<std::string> Members;
};

bool isFusedGroup(const Node &N);
/// The group attributes of N (a FusedGroup node with valid attributes).
GroupInfo groupInfo(const Node &N);

/// The name a member contributes to `members`: its ONNX name, or a
/// description when it has none.
std::string memberName(const Node &N);

/// Replaces Members (nodes of G, any order, forming a convex set: no path
/// leaves the set and re-enters it) by one FusedGroup node whose body holds
/// copies of them. Results of members used outside the set (or graph
/// outputs) become the group's results and keep their names. The graph is
/// re-sorted topologically. Returns the group node.
llvm::Expected<Node *> outlineFusedGroup(Graph &G,
                                         llvm::ArrayRef<Node *> Members,
                                         GroupKind Kind, int64_t Id);

/// Replaces a FusedGroup node by copies of its body's nodes (the unfused
/// graph again). Result names are kept.
llvm::Error inlineFusedGroup(Graph &G, Node *Group);

/// Reorders G's nodes so every node comes after the producers of its
/// operands, keeping the current order where it already is one. Fails on a
/// cycle, naming a node on it.
llvm::Error sortTopologically(Graph &G);

} // namespace solder

#endif
