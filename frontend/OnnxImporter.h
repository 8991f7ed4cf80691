//===- OnnxImporter.h - ONNX ModelProto to solder IR ------------*- C++ -*-===//
//
// Reads an ONNX model (file or bytes, up to 2 GB, external data resolved
// inside the model's folder), resolves each node to the op version selected
// by the model's opset imports, converts it to solder's canonical op form
// (see ir/Ops.def), turns Constant nodes into constants, and runs shape
// inference. Models with unsupported ops fail with one error listing every
// unsupported op type and the nodes using it.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_FRONTEND_ONNXIMPORTER_H
#define SOLDER_FRONTEND_ONNXIMPORTER_H

#include "ir/Graph.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include <memory>
#include <vector>

namespace solder {

struct ImportOptions {
  /// Concrete shapes for graph inputs by name (`--shape input_ids=1x128`);
  /// symbolic dims of those inputs become bound to these sizes.
  llvm::StringMap<std::vector<int64_t>> InputShapes;
  /// Concrete sizes for named symbols (`--shape N=4` where N is a dim name).
  llvm::StringMap<int64_t> SymbolSizes;
};

llvm::Expected<std::unique_ptr<Graph>>
importOnnxFile(llvm::StringRef Path, const ImportOptions &Opts = {});

/// BaseDir is the folder external data paths are resolved against (and
/// confined to); empty means external data is refused.
llvm::Expected<std::unique_ptr<Graph>>
importOnnxBytes(llvm::StringRef Bytes, llvm::StringRef BaseDir,
                const ImportOptions &Opts = {});

/// The model in Bytes, which Owner keeps alive and unchanged while any
/// constant of the graph (or a copy) refers to them: constants view them
/// instead of copying. Repeated imports of one buffer (a dynamic model's
/// shape variants) thus share their weights' bytes. Path names the model
/// in errors and locates external data (empty: bytes given, refused).
llvm::Expected<std::unique_ptr<Graph>>
importOnnxShared(llvm::StringRef Bytes, std::shared_ptr<const void> Owner,
                 llvm::StringRef Path, const ImportOptions &Opts = {});

/// A serialized onnx.TensorProto (the ONNX test-data `.pb` format).
llvm::Expected<Tensor> readTensorProtoFile(llvm::StringRef Path);
llvm::Error writeTensorProtoFile(llvm::StringRef Path, const Tensor &T,
                                 llvm::StringRef Name = "");

} // namespace solder

#endif
