//===- TensorProto.h - onnx.TensorProto <-> solder::Tensor ------*- C++ -*-===//
//
// Internal to the frontend. Converts ONNX tensors (raw_data, the typed
// repeated fields, external data files) into solder Tensors and back, maps
// ONNX element-type numbers to DTypes, checks dims against solder's size
// limits, and parses protobuf messages of up to 2 GB from files or bytes.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_FRONTEND_TENSORPROTO_H
#define SOLDER_FRONTEND_TENSORPROTO_H

#include "ir/Tensor.h"
#include "onnx/onnx_pb.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include <memory>
#include <optional>

namespace solder {
namespace onnximport {

/// The DType of an ONNX TensorProto.DataType number, if solder supports it.
std::optional<DType> dtypeFromOnnx(int32_t OnnxType);
/// The ONNX TensorProto.DataType number of a DType.
int32_t dtypeToOnnx(DType T);
/// "FLOAT", "STRING", "FLOAT8E4M3FN"... or "<type 42>" for messages.
std::string onnxTypeName(int32_t OnnxType);

/// Checks that every dim is in [0, MaxDimSize] and the element count is at
/// most MaxElementCount; What names the tensor in the error.
llvm::Error checkDims(llvm::ArrayRef<int64_t> Dims, const llvm::Twine &What);

/// Converts TP into a Tensor. raw_data is moved out of TP (left empty), so a
/// large initializer is never held twice. External data is read from files
/// inside BaseDir (empty BaseDir: external data is refused). What names the
/// tensor in errors ("initializer 'conv1.weight'"). RawData, when given,
/// is TP's raw_data cut out by splitWeights: viewed when Owner keeps it
/// alive (see Tensor::view), copied otherwise.
llvm::Expected<Tensor>
tensorFromProto(onnx::TensorProto &TP, llvm::StringRef BaseDir,
                const llvm::Twine &What,
                std::optional<llvm::StringRef> RawData = std::nullopt,
                std::shared_ptr<const void> Owner = nullptr);
/// Same for a tensor that must stay intact (attributes): copies raw_data.
llvm::Expected<Tensor> tensorFromProtoCopy(const onnx::TensorProto &TP,
                                           llvm::StringRef BaseDir,
                                           const llvm::Twine &What);

/// Whether an external-data location leaves the model's folder by its text
/// alone: absolute, with a root name, a NUL or a `..` component (where a
/// symlink leads is checked when the file is opened).
bool externalLocationEscapes(llvm::StringRef Location);

/// Fills TP with T (raw_data, dims, data_type) and Name.
void tensorToProto(const Tensor &T, llvm::StringRef Name,
                   onnx::TensorProto &TP);

/// The bytes of a protobuf file (mapped), after checking it is a regular,
/// non-empty file of at most 2 GB. What names the content in errors.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readProtoFile(llvm::StringRef Path, llvm::StringRef What);

/// Parses a serialized message of up to 2 GB from a file / from bytes.
/// What names the content in errors ("ONNX model").
llvm::Error parseProtoFile(llvm::StringRef Path,
                           google::protobuf::MessageLite &Msg,
                           llvm::StringRef What);
/// Where names the source in errors ("'model.onnx'"; default "input").
llvm::Error parseProtoBytes(llvm::StringRef Bytes,
                            google::protobuf::MessageLite &Msg,
                            llvm::StringRef What,
                            llvm::StringRef Where = "input");

} // namespace onnximport
} // namespace solder

#endif
