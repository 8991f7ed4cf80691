//===- FusionReport.cpp - What was fused, how it runs, what was not -------===//
#include "tools/FusionReport.h"
#include "ir/AttentionSpec.h"
#include "ir/FusedGroup.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>

using namespace llvm;

namespace solder {

bool isFusionPass(StringRef Pass) {
  return Pass.endswith("-fusion") || Pass == "batchnorm-folding" ||
         Pass == "norm-recognition" || Pass == "gelu-recognition" ||
         Pass == "attention-recognition";
}

std::vector<DecisionRecord>
rejectedFusions(ArrayRef<DecisionRecord> Decisions) {
  std::vector<DecisionRecord> Out;
  StringSet<> Seen;
  for (const DecisionRecord &D : Decisions) {
    if (D.Applied || !isFusionPass(D.Pass))
      continue;
    // Fixpoint stages run a pass several times; the same rejection again
    // says nothing new.
    if (!Seen.insert(D.Pass + "\n" + D.Node + "\n" + D.Reason).second)
      continue;
    Out.push_back(D);
  }
  return Out;
}

std::vector<DecisionRecord>
layoutBoundaries(ArrayRef<DecisionRecord> Decisions) {
  std::vector<DecisionRecord> Out;
  for (const DecisionRecord &D : Decisions)
    if (D.Pass == "conv-layout" &&
        StringRef(D.Reason).startswith("layout boundary"))
      Out.push_back(D);
  return Out;
}

FusionReport fusionReportFromGraph(const Graph &G,
                                   ArrayRef<DecisionRecord> Decisions,
                                   StringRef RunsAs) {
  FusionReport R;
  for (const auto &N : G.nodes()) {
    if (N->kind() == OpKind::Attention) {
      // attention-recognition's node: a group of its own kind.
      AttentionGroup AG = attentionGroup(*N);
      FusionReportGroup Group;
      Group.Id = AG.Id;
      Group.Kind = "attention";
      Group.Members = std::move(AG.Members);
      Group.RunsAs = RunsAs.str();
      R.Groups.push_back(std::move(Group));
      continue;
    }
    if (!isFusedGroup(*N))
      continue;
    GroupInfo Info = groupInfo(*N);
    FusionReportGroup Group;
    Group.Id = Info.Id;
    Group.Kind = groupKindName(Info.Kind).str();
    Group.Members = std::move(Info.Members);
    Group.RunsAs = RunsAs.str();
    R.Groups.push_back(std::move(Group));
  }
  llvm::stable_sort(R.Groups,
                    [](const auto &A, const auto &B) { return A.Id < B.Id; });
  R.Rejected = rejectedFusions(Decisions);
  R.LayoutBoundaries = layoutBoundaries(Decisions);
  return R;
}

void printFusionReport(raw_ostream &OS, const FusionReport &R) {
  OS << R.Groups.size() << " fused group" << (R.Groups.size() == 1 ? "" : "s")
     << ", " << R.Rejected.size() << " candidate"
     << (R.Rejected.size() == 1 ? "" : "s") << " not fused";
  if (!R.LayoutBoundaries.empty())
    OS << ", " << R.LayoutBoundaries.size() << " layout transpose"
       << (R.LayoutBoundaries.size() == 1 ? "" : "s");
  OS << "\n";
  // Columns aligned over all groups, members last: they can be long.
  size_t IdW = 0, KindW = 0, RunsW = 0;
  for (const FusionReportGroup &G : R.Groups) {
    IdW = std::max(IdW, std::to_string(G.Id).size());
    KindW = std::max(KindW, G.Kind.size());
    RunsW = std::max(RunsW, G.RunsAs.size());
  }
  for (const FusionReportGroup &G : R.Groups) {
    OS << "group " << left_justify(std::to_string(G.Id), IdW) << "  "
       << left_justify(G.Kind, KindW) << "  " << left_justify(G.RunsAs, RunsW)
       << "  " << join(G.Members, ", ") << "\n";
    for (const FusionReportStep &S : G.Steps)
      if (!S.Library.empty())
        OS << "    step " << S.Index << ": " << S.Library << "\n";
  }
  for (const DecisionRecord &D : R.Rejected)
    OS << "not fused: " << D.Node << " (" << D.Pass << "): " << D.Reason
       << "\n";
  for (const DecisionRecord &D : R.LayoutBoundaries)
    OS << "layout: " << D.Node << ": " << D.Reason << "\n";
}

json::Value fusionReportToJson(const FusionReport &R) {
  json::Array Groups;
  for (const FusionReportGroup &G : R.Groups) {
    json::Array Members, Steps;
    for (const std::string &M : G.Members)
      Members.push_back(M);
    for (const FusionReportStep &S : G.Steps)
      Steps.push_back(json::Object{
          {"index", S.Index}, {"label", S.Label}, {"library", S.Library}});
    Groups.push_back(json::Object{{"id", G.Id},
                                  {"kind", G.Kind},
                                  {"members", std::move(Members)},
                                  {"runs_as", G.RunsAs},
                                  {"steps", std::move(Steps)}});
  }
  json::Array Rejected;
  for (const DecisionRecord &D : R.Rejected)
    Rejected.push_back(json::Object{{"pass", D.Pass},
                                    {"node", D.Node},
                                    {"onnx_name", D.OnnxName},
                                    {"reason", D.Reason}});
  json::Array Layout;
  for (const DecisionRecord &D : R.LayoutBoundaries)
    Layout.push_back(json::Object{{"node", D.Node}, {"reason", D.Reason}});
  return json::Object{{"groups", std::move(Groups)},
                      {"rejected", std::move(Rejected)},
                      {"layout_boundaries", std::move(Layout)}};
}

FusionReportFlag::FusionReportFlag(cl::SubCommand &Sub, cl::OptionCategory &Cat)
    : Format("fusion-report", cl::ValueOptional, cl::value_desc("text|json"),
             cl::desc("Print the fused groups (id, kind, how each runs, "
                      "member ONNX nodes) and the candidates the fusion "
                      "passes rejected, with reasons; =json prints one JSON "
                      "object"),
             cl::sub(Sub), cl::cat(Cat)) {}

Expected<bool> FusionReportFlag::wantsJson() const {
  if (Format.empty() || Format == "text")
    return false;
  if (Format == "json")
    return true;
  return createStringError(inconvertibleErrorCode(),
                           "--fusion-report=" + Format +
                               ": expected text or json");
}

void FusionReportFlag::print(raw_ostream &OS, const FusionReport &R) const {
  Expected<bool> Json = wantsJson();
  if (Json && *Json) {
    OS << formatv("{0:2}", fusionReportToJson(R)) << "\n";
    return;
  }
  consumeError(Json.takeError());
  printFusionReport(OS, R);
}

} // namespace solder
