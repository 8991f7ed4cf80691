//===- FusionReport.h - What was fused, how it runs, what was not -*- C++ -*-=//
//
// The `--fusion-report` of `solder compile` and `solder dump-ir`: every
// fused group (id, kind, member ONNX nodes, how the plan runs it) and every
// candidate a fusion pass rejected, with the pass and its reason. Built from
// a plan (compile) or from the optimized graph alone (dump-ir, which plans
// nothing). Groups are listed by id, rejections in pipeline order, so the
// same model gives the same report.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TOOLS_FUSIONREPORT_H
#define SOLDER_TOOLS_FUSIONREPORT_H

#include "ir/Graph.h"
#include "passes/Pass.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace solder {

struct FusionReportStep {
  unsigned Index = 0; ///< position in the plan's steps
  std::string Label;
  /// A library call's library, math mode and algorithm (empty for a
  /// kernel); see describeLibraryChoice.
  std::string Library;
};

struct FusionReportGroup {
  int64_t Id = -1;
  /// "contraction", "loop", "reduction", "attention"
  std::string Kind;
  std::vector<std::string> Members; ///< ONNX node names, body order
  std::string RunsAs;
  std::vector<FusionReportStep> Steps;
};

struct FusionReport {
  std::vector<FusionReportGroup> Groups; ///< by id
  std::vector<DecisionRecord> Rejected;  ///< pipeline order, no repeats
  /// The Transposes conv-layout left where an NHWC region meets NCHW.
  std::vector<DecisionRecord> LayoutBoundaries;
};

/// conv-layout's notes on the Transposes it left, in order.
std::vector<DecisionRecord>
layoutBoundaries(llvm::ArrayRef<DecisionRecord> Decisions);

/// True for the passes whose rejections the report lists: the fusion
/// passes ("*-fusion") and the ones that decide what a group can hold
/// (batchnorm-folding, norm-recognition, gelu-recognition,
/// attention-recognition).
bool isFusionPass(llvm::StringRef Pass);

/// The rejected decisions of fusion passes, in order; a rejection noted
/// again in a later fixpoint round (same pass, node and reason) is listed
/// once.
std::vector<DecisionRecord>
rejectedFusions(llvm::ArrayRef<DecisionRecord> Decisions);

/// The report of an optimized graph without a plan: each top-level
/// FusedGroup and Attention node, RunsAs set to RunsAs for all.
FusionReport fusionReportFromGraph(const Graph &G,
                                   llvm::ArrayRef<DecisionRecord> Decisions,
                                   llvm::StringRef RunsAs);

/// Terminal text:
///   2 fused groups, 1 candidate not fused
///   group 0  contraction  cuDNN conv + generated kernel ...  conv1, relu1
///   not fused: Relu node 'r7' (loop-fusion): second user outside the group
///   layout: Transpose node 'x.nhwc': layout boundary: feeds ...
/// and under a group, each library step's choice:
///     step 3: cuDNN NHWC, f16 tensor-op math, ...
void printFusionReport(llvm::raw_ostream &OS, const FusionReport &R);

/// {"groups":[{"id","kind","members","runs_as",
///              "steps":[{"index","label","library"}]}],
///  "rejected":[{"pass","node","onnx_name","reason"}],
///  "layout_boundaries":[{"node","reason"}]}
llvm::json::Value fusionReportToJson(const FusionReport &R);

/// `--fusion-report[=text|json]` of one command, declared right after its
/// SubCommand in the same file (like FusionFlags).
class FusionReportFlag {
public:
  FusionReportFlag(llvm::cl::SubCommand &Sub, llvm::cl::OptionCategory &Cat);
  bool requested() const { return Format.getNumOccurrences() > 0; }
  /// Whether JSON was asked for; an error for a format other than text or
  /// json.
  llvm::Expected<bool> wantsJson() const;
  /// Prints R in the format asked for.
  void print(llvm::raw_ostream &OS, const FusionReport &R) const;

private:
  llvm::cl::opt<std::string> Format;
};

} // namespace solder

#endif
