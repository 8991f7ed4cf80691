//===- FuzzTargets.cpp - The table of fuzz targets ------------------------===//
#include "fuzz/FuzzTargets.h"

namespace solder {
namespace fuzz {

llvm::ArrayRef<FuzzTarget> fuzzTargets() {
  static const FuzzTarget Targets[] = {
      {"onnx_import", onnxImport},
#ifdef SOLDER_HAVE_CUDA
      {"plan_file", planFile},
#endif
      {"ir_parser", irParser},     {"npy", npy}, {"tensor_proto", tensorProto},
  };
  return Targets;
}

} // namespace fuzz
} // namespace solder
