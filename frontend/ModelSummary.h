//===- ModelSummary.h - What an ONNX model contains -------------*- C++ -*-===//
//
// Reads an ONNX ModelProto without converting it to solder's IR and
// describes it: opsets, producer, inputs and outputs with their (symbolic)
// shapes, an op histogram, and everything solder cannot handle (ops outside
// the frontend's op set, dtypes outside the supported set, legacy opset
// features). `solder inspect` prints this; `solder test-onnx` uses it to
// decide which tests to skip, so unsupported models are recognized without
// importing them.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_FRONTEND_MODELSUMMARY_H
#define SOLDER_FRONTEND_MODELSUMMARY_H

#include "ir/Tensor.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace solder {

struct ValueSummary {
  std::string Name;
  /// "f32[N,3,224,224]", "i64[]", "f32[?,4]", "sequence<f32[?]>",
  /// "string[3]"...
  std::string TypeText;
  /// Rank of a tensor with a known shape, else -1.
  int Rank = -1;
  /// Per dim: the static size, or -1 for a symbolic or unknown dim.
  std::vector<int64_t> StaticDims;
  /// Per dim: the symbol of a symbolic dim, else "".
  std::vector<std::string> DimSymbols;
};

struct ModelSummary {
  int64_t IrVersion = 0;
  std::string ProducerName, ProducerVersion, GraphName;
  /// (domain, version); the default domain is "ai.onnx".
  std::vector<std::pair<std::string, int64_t>> Opsets;
  /// Graph inputs that are not initializers, in order.
  std::vector<ValueSummary> Inputs;
  std::vector<ValueSummary> Outputs;
  size_t NumNodes = 0; // including nodes of sub-graphs
  size_t NumInitializers = 0;
  uint64_t InitializerBytes = 0;
  /// (op type, count), most frequent first. Ops of other domains are
  /// written "domain::Op". Counts nodes of sub-graphs (If/Loop bodies) too.
  std::vector<std::pair<std::string, unsigned>> OpHistogram;
  /// Op types (as in OpHistogram) the frontend does not import, sorted.
  std::vector<std::string> UnsupportedOps;
  /// "input 'x' has dtype f64", one per offending value (inputs, outputs,
  /// initializers, Constant nodes), for dtypes outside the supported set.
  std::vector<std::string> UnsupportedTypes;
  /// Features of old opsets solder refuses by design (legacy `broadcast`
  /// attribute, training-mode Dropout): "Add node 'a': ...".
  std::vector<std::string> LegacyFeatures;
  /// The `location` of every tensor stored as external data (initializers,
  /// Constant attributes, sub-graphs), as written, sorted, once each: the
  /// files besides the model that its content depends on.
  std::vector<std::string> ExternalDataLocations;

  /// The default-domain opset version (0 if absent).
  int64_t defaultOpset() const;
  bool isSupported() const {
    return UnsupportedOps.empty() && UnsupportedTypes.empty();
  }
};

/// Summarizes the model file at Path. Fails only when the file cannot be
/// read or is not a ModelProto.
llvm::Expected<ModelSummary> summarizeOnnxFile(llvm::StringRef Path);
llvm::Expected<ModelSummary> summarizeOnnxBytes(llvm::StringRef Bytes,
                                                llvm::StringRef Name);

/// Specializes a serialized model to fixed values of some graph inputs: each
/// named input becomes an initializer holding its tensor (and is no longer
/// a graph input), so operands that must be constants (Unsqueeze axes,
/// Split sizes fed as inputs in the ONNX node tests) can be imported.
/// Returns the serialized, rewritten model.
llvm::Expected<std::string>
bindInputsAsConstants(llvm::StringRef ModelBytes, llvm::StringRef Name,
                      llvm::ArrayRef<std::pair<std::string, Tensor>> Bindings);

/// Whether the frontend imports nodes of this op type (Domain "" or
/// "ai.onnx" is the default domain).
bool isFrontendSupportedOp(llvm::StringRef Domain, llvm::StringRef OpType);

/// Whether an ONNX TensorProto data type number is one solder supports
/// (f32 f16 bf16 i64 i32 i8 u8 bool).
bool isSupportedOnnxDType(int32_t OnnxType);
/// Short name of an ONNX data type number: "f32", "string", "c64"...
std::string onnxDTypeName(int32_t OnnxType);

} // namespace solder

#endif
