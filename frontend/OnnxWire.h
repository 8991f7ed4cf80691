//===- OnnxWire.h - Weights cut out of a serialized model -------*- C++ -*-===//
//
// Internal to the frontend. Protobuf copies every bytes field it parses, so
// parsing a model copies all of its weights once more. splitWeights walks
// the protobuf wire format of a ModelProto and cuts the raw_data of the main
// graph's initializers out, leaving a small skeleton for protobuf to parse;
// the raw_data stay slices of the caller's (typically memory-mapped) bytes.
// Only the wire format is checked here; the skeleton's parse checks the
// rest.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_FRONTEND_ONNXWIRE_H
#define SOLDER_FRONTEND_ONNXWIRE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <optional>
#include <string>
#include <vector>

namespace solder {
namespace onnximport {

struct SplitModel {
  /// The model with the main graph's initializer raw_data removed.
  std::string Skeleton;
  /// Per initializer of the main graph, in order: its raw_data (a slice of
  /// the input bytes), or none when it had no raw_data field.
  std::vector<std::optional<llvm::StringRef>> RawData;
  /// Sum of the sizes of RawData.
  uint64_t RawBytes = 0;
};

/// Fails on bytes that are not well-formed protobuf wire format.
llvm::Expected<SplitModel> splitWeights(llvm::StringRef ModelBytes);

} // namespace onnximport
} // namespace solder

#endif
