//===- Pass.cpp - The pass interface
//---------------------------------------===//
#include "passes/Pass.h"

namespace solder {

void DecisionLog::note(const Node &N, const Decision &D) {
  Records.push_back({"", N.describe(), N.name(), D.Applied, D.Reason});
}

std::vector<std::string> DecisionLog::entries() const {
  std::vector<std::string> Lines;
  for (const DecisionRecord &R : Records)
    Lines.push_back(R.Node + ": " + (R.Applied ? "applied" : "not applied") +
                    (R.Reason.empty() ? "" : ": " + R.Reason));
  return Lines;
}

} // namespace solder
