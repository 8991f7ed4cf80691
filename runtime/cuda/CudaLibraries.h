//===- CudaLibraries.h - cuBLASLt and cuDNN, loaded on first use -*- C++
//-*-===//
//
// The cuBLASLt and cuDNN functions solder calls, resolved when a model is
// first loaded onto a GPU (see codegen/SharedLibrary.h): compiling, the CPU
// reference and every command that never runs on a GPU skip loading them.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_RUNTIME_CUDA_CUDALIBRARIES_H
#define SOLDER_RUNTIME_CUDA_CUDALIBRARIES_H

#include "codegen/GeneratedKernel.h"
#include "llvm/Support/Error.h"
#include <cublasLt.h>
#include <cudaTypedefs.h>
#include <cudnn.h>

namespace solder {

#define SOLDER_CUBLASLT_FUNCTIONS(X)                                           \
  X(cublasLtCreate)                                                            \
  X(cublasLtDestroy)                                                           \
  X(cublasLtMatmulDescCreate)                                                  \
  X(cublasLtMatmulDescDestroy)                                                 \
  X(cublasLtMatmulDescSetAttribute)                                            \
  X(cublasLtMatrixLayoutCreate)                                                \
  X(cublasLtMatrixLayoutDestroy)                                               \
  X(cublasLtMatrixLayoutSetAttribute)                                          \
  X(cublasLtMatmulPreferenceCreate)                                            \
  X(cublasLtMatmulPreferenceDestroy)                                           \
  X(cublasLtMatmulPreferenceSetAttribute)                                      \
  X(cublasLtMatmulAlgoGetHeuristic)                                            \
  X(cublasLtMatmulAlgoCheck)                                                   \
  X(cublasLtMatmul)

#define SOLDER_CUDNN_FUNCTIONS(X)                                              \
  X(cudnnCreate)                                                               \
  X(cudnnDestroy)                                                              \
  X(cudnnSetStream)                                                            \
  X(cudnnGetErrorString)                                                       \
  X(cudnnCreateTensorDescriptor)                                               \
  X(cudnnDestroyTensorDescriptor)                                              \
  X(cudnnSetTensorNdDescriptor)                                                \
  X(cudnnCreateFilterDescriptor)                                               \
  X(cudnnDestroyFilterDescriptor)                                              \
  X(cudnnSetFilterNdDescriptor)                                                \
  X(cudnnCreateConvolutionDescriptor)                                          \
  X(cudnnDestroyConvolutionDescriptor)                                         \
  X(cudnnSetConvolutionNdDescriptor)                                           \
  X(cudnnSetConvolutionMathType)                                               \
  X(cudnnSetConvolutionGroupCount)                                             \
  X(cudnnGetConvolutionNdForwardOutputDim)                                     \
  X(cudnnFindConvolutionForwardAlgorithmEx)                                    \
  X(cudnnFindConvolutionBackwardDataAlgorithmEx)                               \
  X(cudnnGetConvolutionForwardWorkspaceSize)                                   \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize)                              \
  X(cudnnConvolutionForward)                                                   \
  X(cudnnConvolutionBackwardData)                                              \
  X(cudnnCreateActivationDescriptor)                                           \
  X(cudnnSetActivationDescriptor)                                              \
  X(cudnnDestroyActivationDescriptor)                                          \
  X(cudnnConvolutionBiasActivationForward)                                     \
  X(cudnnGetLastErrorString)                                                   \
  X(cudnnGetVersion)                                                           \
  X(cudnnBackendCreateDescriptor)                                              \
  X(cudnnBackendDestroyDescriptor)                                             \
  X(cudnnBackendSetAttribute)                                                  \
  X(cudnnBackendGetAttribute)                                                  \
  X(cudnnBackendFinalize)                                                      \
  X(cudnnBackendExecute)

struct CudaLibraries {
#define SOLDER_CUDA_LIB_POINTER(Name) decltype(&::Name) Name = nullptr;
  SOLDER_CUBLASLT_FUNCTIONS(SOLDER_CUDA_LIB_POINTER)
  SOLDER_CUDNN_FUNCTIONS(SOLDER_CUDA_LIB_POINTER)
#undef SOLDER_CUDA_LIB_POINTER
  /// The driver's tensor-map encoder (for TMA kernels), through cudart's
  /// entry-point query; null where the driver has none.
  PFN_cuTensorMapEncodeTiled_v12000 cuTensorMapEncodeTiled = nullptr;
};

/// Loads both libraries once per process; later calls return the same
/// table or the same error (naming the library that is missing).
llvm::Expected<const CudaLibraries *> loadCudaLibraries();

/// The table, after loadCudaLibraries succeeded (asserted): for code that
/// only runs on a model already loaded onto a device.
const CudaLibraries &cudaLibs();

/// Encodes the tensor map of Shape over the buffer at Ptr (the TMA
/// kernels' parameters; 128-byte swizzle, edges zero-filled). What names
/// the map in errors ("kernel K: argument 3").
llvm::Error encodeTensorMap(const TensorMapShape &Shape, void *Ptr,
                            CUtensorMap &Out, const llvm::Twine &What);

} // namespace solder

#endif
