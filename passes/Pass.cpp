//===- Pass.cpp - The pass interface
//---------------------------------------===//
#include "passes/Pass.h"

namespace solder {

void DecisionLog::note(const Node &N, const Decision &D) {
  Entries.push_back(N.describe() + ": " +
                    (D.Applied ? "applied" : "not applied") +
                    (D.Reason.empty() ? "" : ": " + D.Reason));
}

} // namespace solder
