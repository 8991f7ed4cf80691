//===- ImportContext.h - State shared while importing one model -*- C++ -*-===//
//
// Internal to the frontend. The graph being built, the model's folder, every
// value name the ONNX model uses (so generated names never collide with a
// name a later node defines), and helpers to add constants and nodes. Each
// node is shape-inferred as soon as it is emitted, so converters of later
// nodes can look at operand ranks and dtypes (Softmax-1 coercion, legacy
// broadcasting checks, typed constants for Clip-6 and Pad-2).
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_FRONTEND_IMPORTCONTEXT_H
#define SOLDER_FRONTEND_IMPORTCONTEXT_H

#include "ir/Graph.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Error.h"
#include <string>

namespace solder {
namespace onnximport {

class ImportContext {
public:
  ImportContext(Graph &G, std::string BaseDir)
      : G(G), BaseDir(std::move(BaseDir)) {}

  Graph &graph() { return G; }
  llvm::StringRef baseDir() const { return BaseDir; }

  /// Every value name the model defines or reads.
  llvm::StringSet<> OnnxNames;
  /// Names some node reads or the graph outputs (to tell whether optional
  /// results such as BatchNormalization's training statistics are used).
  llvm::StringSet<> ReadNames;

  bool isRead(llvm::StringRef Name) const {
    return !Name.empty() && ReadNames.count(Name);
  }

  /// A value name used neither by the model nor by the graph so far.
  std::string freshName(llvm::StringRef Base);
  /// A constant with a fresh name derived from Base.
  Value *addConstant(llvm::StringRef Base, Tensor T);
  Value *constInt64s(llvm::StringRef Base, llvm::ArrayRef<int64_t> Values);
  /// A rank-0 constant of type Elem.
  Value *constScalar(llvm::StringRef Base, DType Elem, double V);

  /// Appends a node (results named ResultNames; empty names get fresh
  /// ones) and infers its result types.
  llvm::Expected<Node *> emit(OpKind Kind, llvm::ArrayRef<Value *> Operands,
                              llvm::ArrayRef<std::string> ResultNames,
                              llvm::StringRef NodeName, AttrMap Attrs = {});

private:
  Graph &G;
  std::string BaseDir;
  unsigned Counter = 0;
};

} // namespace onnximport
} // namespace solder

#endif
