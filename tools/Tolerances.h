//===- Tolerances.h - Comparison tolerances for conformance -----*- C++ -*-===//
//
// The default tolerance of the ONNX backend test runner (rtol 1e-3, atol
// 1e-7: |a - b| <= atol + rtol * |b|) and a table of per-test overrides,
// each with the reason it is needed, so a loosened tolerance is never
// silent.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TOOLS_TOLERANCES_H
#define SOLDER_TOOLS_TOLERANCES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace solder {

struct Tolerance {
  double RTol = 1e-3;
  double ATol = 1e-7;
};

struct ToleranceOverride {
  /// The test folder name ("test_densenet121").
  const char *TestName;
  Tolerance Tol;
  /// Why this test needs a looser bound.
  const char *Reason;
};

/// A test whose expected output depends on the summation order of its
/// generator: no tolerance describes it, so a failure counts as skipped,
/// with this reason and the failure (a pass still counts as a pass).
struct IllConditionedTest {
  const char *TestName;
  const char *Reason;
};
/// The entry for a test folder name, or null.
const IllConditionedTest *findIllConditioned(llvm::StringRef TestName);

/// Every override, for listing.
llvm::ArrayRef<ToleranceOverride> toleranceOverrides();
/// The override for a test folder name, or null.
const ToleranceOverride *findToleranceOverride(llvm::StringRef TestName);
/// The tolerance that applies to a test.
Tolerance toleranceFor(llvm::StringRef TestName);

} // namespace solder

#endif
