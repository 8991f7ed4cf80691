//===- CudaLibraries.cpp - cuBLASLt and cuDNN, loaded on first use --------===//
#include "runtime/cuda/CudaLibraries.h"
#include "codegen/SharedLibrary.h"
#include <cassert>

namespace solder {

#define SOLDER_STRINGIFY_(X) #X
#define SOLDER_STRINGIFY(X) SOLDER_STRINGIFY_(X)

static llvm::Error loadInto(CudaLibraries &L) {
  const char *LtName = SOLDER_CUBLASLT_SONAME;
  auto Lt = openSharedLibrary(LtName, {SOLDER_CUDA_LIBRARY_DIR},
                              "cuBLASLt, for MatMul and Gemm");
  if (!Lt)
    return Lt.takeError();
  const char *DnnName = "libcudnn.so." SOLDER_STRINGIFY(CUDNN_MAJOR);
  auto Dnn = openSharedLibrary(
      DnnName, {SOLDER_CUDNN_LIBRARY_DIR, SOLDER_CUDA_LIBRARY_DIR},
      "cuDNN 9, for Conv, ConvTranspose and attention");
  if (!Dnn)
    return Dnn.takeError();
#define SOLDER_RESOLVE_LT(Name)                                                \
  if (llvm::Error E = resolveSymbol(*Lt, LtName, #Name, L.Name))               \
    return E;
#define SOLDER_RESOLVE_DNN(Name)                                               \
  if (llvm::Error E = resolveSymbol(*Dnn, DnnName, #Name, L.Name))             \
    return E;
  SOLDER_CUBLASLT_FUNCTIONS(SOLDER_RESOLVE_LT)
  SOLDER_CUDNN_FUNCTIONS(SOLDER_RESOLVE_DNN)
  // Not fatal: only plans with TMA kernels need it (and say so).
  cudaDriverEntryPointQueryResult Q;
  if (cudaGetDriverEntryPointByVersion(
          "cuTensorMapEncodeTiled",
          reinterpret_cast<void **>(&L.cuTensorMapEncodeTiled), 12000,
          cudaEnableDefault, &Q) != cudaSuccess ||
      Q != cudaDriverEntryPointSuccess)
    L.cuTensorMapEncodeTiled = nullptr;
#undef SOLDER_RESOLVE_LT
#undef SOLDER_RESOLVE_DNN
  return llvm::Error::success();
}

static SharedLibraryTable<CudaLibraries> &libraries() {
  static SharedLibraryTable<CudaLibraries> Libs;
  return Libs;
}

llvm::Expected<const CudaLibraries *> loadCudaLibraries() {
  return libraries().get(loadInto);
}

const CudaLibraries &cudaLibs() {
  assert(libraries().loaded() && "loadCudaLibraries() must succeed first");
  return libraries().table();
}

llvm::Error encodeTensorMap(const TensorMapShape &Shape, void *Ptr,
                            CUtensorMap &Out, const llvm::Twine &What) {
  auto Fail = [&](const llvm::Twine &Why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   What + ": " + Why);
  };
  if (!cudaLibs().cuTensorMapEncodeTiled)
    return Fail("needs a tensor map, and this CUDA driver has no "
                "cuTensorMapEncodeTiled");
  cuuint64_t Dims[2] = {cuuint64_t(Shape.Dims[0]), cuuint64_t(Shape.Dims[1])};
  cuuint64_t Stride[1] = {cuuint64_t(Shape.RowBytes)};
  cuuint32_t Box[2] = {Shape.Box[0], Shape.Box[1]}, Step[2] = {1, 1};
  CUresult R = cudaLibs().cuTensorMapEncodeTiled(
      &Out,
      Shape.Elem == DType::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
      2, Ptr, Dims, Stride, Box, Step, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (R != CUDA_SUCCESS)
    return Fail("cannot encode its tensor map (CUresult " +
                llvm::Twine(int(R)) + "; the buffer must be 16-byte aligned)");
  return llvm::Error::success();
}

} // namespace solder
