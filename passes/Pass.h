//===- Pass.h - The pass interface ------------------------------*- C++ -*-===//
//
// A pass rewrites a Graph in place. `run` returns whether it changed the
// graph, or an error for malformed input. A rewrite that does not apply to a
// candidate is not an error: the pass records a Decision with the reason,
// printed when the pipeline runs with debug output.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_PASS_H
#define SOLDER_PASSES_PASS_H

#include "ir/Graph.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace solder {

/// Why a rewrite did or did not apply to one candidate node.
struct Decision {
  bool Applied = false;
  std::string Reason;
  static Decision yes() { return {true, ""}; }
  static Decision no(std::string Why) { return {false, std::move(Why)}; }
  explicit operator bool() const { return Applied; }
};

/// One noted decision, kept for the fusion report.
struct DecisionRecord {
  std::string Pass;     ///< the pass that decided (set by the pipeline)
  std::string Node;     ///< Node::describe() of the candidate
  std::string OnnxName; ///< the candidate's ONNX node name (may be empty)
  bool Applied = false;
  std::string Reason;
};

/// Reasons collected during one pass run ("Conv node 'c1': not fused: ...").
class DecisionLog {
public:
  void note(const Node &N, const Decision &D);
  /// The decisions as lines: "<node>: applied|not applied: <reason>".
  std::vector<std::string> entries() const;
  llvm::ArrayRef<DecisionRecord> records() const { return Records; }
  void clear() { Records.clear(); }

private:
  std::vector<DecisionRecord> Records;
};

/// Runs Rewrite (Node & -> Expected<Decision>) on each node Match accepts,
/// all collected before the first rewrite (rewrites insert nodes), and notes
/// every decision. Returns whether any rewrite applied.
template <typename MatchT, typename RewriteT>
llvm::Expected<bool> rewriteMatching(Graph &G, DecisionLog &Log, MatchT Match,
                                     RewriteT Rewrite) {
  std::vector<Node *> Candidates;
  for (auto &N : G.nodes())
    if (Match(*N))
      Candidates.push_back(N.get());
  bool Changed = false;
  for (Node *N : Candidates) {
    llvm::Expected<Decision> D = Rewrite(*N);
    if (!D)
      return D.takeError();
    Log.note(*N, *D);
    Changed |= D->Applied;
  }
  return Changed;
}

class Pass {
public:
  virtual ~Pass() = default;
  /// Stable kebab-case name: used by --disable-pass and dump file names.
  virtual llvm::StringRef name() const = 0;
  virtual llvm::Expected<bool> run(Graph &G, DecisionLog &Log) = 0;
};

} // namespace solder

#endif
