//===- ImportAndRun.h - Run a built ONNX model on the reference -*- C++ -*-===//
//
// For ops the frontend rewrites (lowered ops, OneHot-9): import the model a
// ModelBuilder holds and run it on the reference executor, failing the
// test on any error.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TESTS_REFERENCE_IMPORTANDRUN_H
#define SOLDER_TESTS_REFERENCE_IMPORTANDRUN_H

#include "runtime/reference/ReferenceExecutor.h"
#include "tests/frontend/ModelBuilder.h"

namespace solder {
namespace testing {

/// The model's outputs on Inputs (empty on failure).
inline std::vector<Tensor> importAndRun(ModelBuilder &B,
                                        llvm::ArrayRef<Tensor> Inputs) {
  auto G = B.import();
  if (!G) {
    ADD_FAILURE() << llvm::toString(G.takeError());
    return {};
  }
  auto R = runReference(**G, Inputs);
  if (!R) {
    ADD_FAILURE() << llvm::toString(R.takeError());
    return {};
  }
  return std::move(*R);
}

} // namespace testing
} // namespace solder

#endif
