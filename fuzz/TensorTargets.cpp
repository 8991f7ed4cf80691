//===- TensorTargets.cpp - Fuzzing the .npy and TensorProto readers -------===//
#include "frontend/TensorProto.h"
#include "fuzz/FuzzTargets.h"
#include "ir/Type.h"
#include "onnx/onnx_pb.h"
#include "tools/TensorIO.h"

namespace solder {
namespace fuzz {

/// "" when A and B hold the same dtype, dims and bytes.
static std::string compareTensors(const Tensor &A, const Tensor &B) {
  if (A.dtype() != B.dtype() || A.dims() != B.dims())
    return "read back as " + typeToString(B.type()) + ", written as " +
           typeToString(A.type());
  if (A.bytes() != B.bytes())
    return "read back with other bytes than written (" +
           typeToString(A.type()) + ")";
  return "";
}

std::string npy(llvm::StringRef Bytes) {
  llvm::Expected<Tensor> T = parseNpy(Bytes, "fuzz.npy");
  if (!T) {
    llvm::consumeError(T.takeError());
    return "";
  }
  std::string Written = serializeNpy(*T);
  llvm::Expected<Tensor> Back = parseNpy(Written, "written.npy");
  if (!Back)
    return "a written .npy does not read back: " +
           llvm::toString(Back.takeError());
  return compareTensors(*T, *Back);
}

std::string tensorProto(llvm::StringRef Bytes) {
  onnx::TensorProto TP;
  if (llvm::Error E = onnximport::parseProtoBytes(Bytes, TP, "TensorProto")) {
    llvm::consumeError(std::move(E));
    return "";
  }
  // No base folder: external data is refused, as for a model given as
  // bytes.
  llvm::Expected<Tensor> T = onnximport::tensorFromProto(TP, "", "tensor");
  if (!T) {
    llvm::consumeError(T.takeError());
    return "";
  }
  onnx::TensorProto Out;
  onnximport::tensorToProto(*T, "t", Out);
  std::string Written;
  if (!Out.SerializeToString(&Written))
    return "a tensor read from a TensorProto does not serialize";
  onnx::TensorProto In;
  if (llvm::Error E = onnximport::parseProtoBytes(Written, In, "TensorProto"))
    return "a written TensorProto does not parse: " +
           llvm::toString(std::move(E));
  llvm::Expected<Tensor> Back = onnximport::tensorFromProto(In, "", "tensor");
  if (!Back)
    return "a written TensorProto does not read back: " +
           llvm::toString(Back.takeError());
  return compareTensors(*T, *Back);
}

} // namespace fuzz
} // namespace solder
