//===- OpsetConversion.h - ONNX op versions to canonical IR -----*- C++ -*-===//
//
// Internal to the frontend. Knows, for every op solder supports, the ONNX
// versions it was defined in (its since_versions), resolves a node to the
// version its model's opset selects, and converts the node from that version
// into solder's canonical (opset 21) form: attributes that became operands
// turn into constants, legacy-only attributes are dropped or refused.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_FRONTEND_OPSETCONVERSION_H
#define SOLDER_FRONTEND_OPSETCONVERSION_H

#include "frontend/ImportContext.h"
#include "onnx/onnx_pb.h"
#include "llvm/Support/Error.h"
#include <optional>
#include <string>

namespace solder {
namespace onnximport {

/// The newest default-domain opset solder can read. Versions after 21 of
/// the ops solder supports only add element types (and attributes that only
/// matter for those types, rejected if used), so they convert like 21.
constexpr int64_t MaxSupportedOpset = 28;

/// True for "" and "ai.onnx".
bool isDefaultDomain(llvm::StringRef Domain);

/// The version of OpType (default domain) that opset Opset selects: its
/// largest since_version <= Opset; 0 when the op does not exist yet at that
/// opset or solder does not know it.
int64_t resolveOpVersion(llvm::StringRef OpType, int64_t Opset);

/// Empty when solder can import the node at this opset; otherwise the label
/// it is listed under in the "unsupported ops" error ("Foo",
/// "com.microsoft.Attention", "Gelu (not in opset 17)").
std::string unsupportedOpLabel(const onnx::NodeProto &NP, int64_t Opset);

/// Converts one node (its operands already defined in the graph) and
/// appends the resulting node(s). Consumes raw tensor data of Constant
/// nodes and tensor attributes (hence non-const).
llvm::Error convertNode(ImportContext &C, onnx::NodeProto &NP, int64_t Opset);

/// "Conv node 'conv1'" or "Conv node producing 'y'", as Node::describe().
std::string describeOnnxNode(const onnx::NodeProto &NP);

} // namespace onnximport
} // namespace solder

#endif
