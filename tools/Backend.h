//===- Backend.h - Where the CLI runs a model -------------------*- C++ -*-===//
//
// A Backend prepares an imported graph (runs the compiler pipeline) and
// executes it. The reference backend interprets the graph on the CPU; the
// CUDA backend plugs in here once the GPU runtime exists.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TOOLS_BACKEND_H
#define SOLDER_TOOLS_BACKEND_H

#include "ir/Graph.h"
#include "passes/Pipeline.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include <memory>
#include <vector>

namespace solder {

class Backend {
public:
  virtual ~Backend() = default;
  virtual llvm::StringRef name() const = 0;
  /// Compiles G in place for this backend. With Optimize false the graph is
  /// run as imported (the pure reference semantics).
  virtual llvm::Error prepare(Graph &G, const PipelineOptions &Opts,
                              bool Optimize) = 0;
  /// Runs a prepared graph: one input per graph input, in order.
  virtual llvm::Expected<std::vector<Tensor>>
  run(const Graph &G, llvm::ArrayRef<Tensor> Inputs) = 0;
};

/// Names accepted by --backend, for help texts.
llvm::ArrayRef<llvm::StringRef> backendNames();
/// The backend of that name, or an error saying why it is unavailable.
llvm::Expected<std::unique_ptr<Backend>> createBackend(llvm::StringRef Name);

} // namespace solder

#endif
