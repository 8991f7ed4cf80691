//===- DnnGraph.h - Building cuDNN backend operation graphs ----*- C++ -*-===//
//
// The pieces every cuDNN backend-API call of the runtime shares: owned
// descriptors, errors that carry cuDNN's own last message, a builder that
// creates, sets and finalizes the descriptors of one operation graph and
// keeps them alive, and the engine choice (heuristics, then the first
// configuration that finalizes). Used by attention (CudnnAttention.h) and
// convolution graphs (CudnnConvGraph.h).
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_RUNTIME_CUDA_DNNGRAPH_H
#define SOLDER_RUNTIME_CUDA_DNNGRAPH_H

#include "ir/DType.h"
#include "runtime/cuda/CudaLibraries.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace solder {

/// A cuDNN backend descriptor, destroyed with its owner.
class DnnDescriptor {
public:
  DnnDescriptor() = default;
  explicit DnnDescriptor(cudnnBackendDescriptor_t D) : D(D) {}
  DnnDescriptor(DnnDescriptor &&O) noexcept : D(O.D) { O.D = nullptr; }
  DnnDescriptor &operator=(DnnDescriptor &&O) noexcept;
  DnnDescriptor(const DnnDescriptor &) = delete;
  DnnDescriptor &operator=(const DnnDescriptor &) = delete;
  ~DnnDescriptor();
  cudnnBackendDescriptor_t get() const { return D; }

private:
  cudnnBackendDescriptor_t D = nullptr;
};

/// The message of a failed cuDNN call, with cuDNN's own last error text.
llvm::Error dnnError(cudnnStatus_t S, const llvm::Twine &What);

#define SOLDER_DNN_TRY(Expr, What)                                             \
  do {                                                                         \
    cudnnStatus_t Status_ = (Expr);                                            \
    if (Status_ != CUDNN_STATUS_SUCCESS)                                       \
      return ::solder::dnnError(Status_, What);                                \
  } while (0)

/// cuDNN's type of f16, bf16 and f32 (f16 for anything else).
cudnnDataType_t dnnType(DType T);

/// Builds the descriptors of one operation graph, keeping every one alive
/// until the builder goes (the graph and plan refer to them).
class GraphBuilder {
public:
  std::vector<DnnDescriptor> Owned;

  llvm::Expected<cudnnBackendDescriptor_t>
  create(cudnnBackendDescriptorType_t T) {
    cudnnBackendDescriptor_t D = nullptr;
    SOLDER_DNN_TRY(cudaLibs().cudnnBackendCreateDescriptor(T, &D),
                   "creating a cuDNN descriptor");
    Owned.emplace_back(D);
    return D;
  }
  static llvm::Error set(cudnnBackendDescriptor_t D,
                         cudnnBackendAttributeName_t A,
                         cudnnBackendAttributeType_t T, int64_t N,
                         const void *V) {
    SOLDER_DNN_TRY(cudaLibs().cudnnBackendSetAttribute(D, A, T, N, V),
                   "setting cuDNN attribute " + llvm::Twine(int(A)));
    return llvm::Error::success();
  }
  static llvm::Error finalize(cudnnBackendDescriptor_t D,
                              const llvm::Twine &What) {
    SOLDER_DNN_TRY(cudaLibs().cudnnBackendFinalize(D), What);
    return llvm::Error::success();
  }

  /// A tensor of dims [n0..n3]; virtual ones live only inside the engine.
  llvm::Expected<cudnnBackendDescriptor_t>
  tensor(int64_t Uid, cudnnDataType_t T, llvm::ArrayRef<int64_t> Dims,
         llvm::ArrayRef<int64_t> Strides, bool Virtual, bool ByValue = false) {
    llvm::Expected<cudnnBackendDescriptor_t> D =
        create(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    if (!D)
      return D.takeError();
    int64_t Align = 16;
    bool V = Virtual, B = ByValue;
    if (llvm::Error E =
            set(*D, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &T))
      return std::move(E);
    if (llvm::Error E = set(*D, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64,
                            Dims.size(), Dims.data()))
      return std::move(E);
    if (llvm::Error E = set(*D, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64,
                            Strides.size(), Strides.data()))
      return std::move(E);
    if (llvm::Error E =
            set(*D, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &Uid))
      return std::move(E);
    if (llvm::Error E = set(*D, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT,
                            CUDNN_TYPE_INT64, 1, &Align))
      return std::move(E);
    if (llvm::Error E =
            set(*D, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &V))
      return std::move(E);
    if (ByValue)
      if (llvm::Error E =
              set(*D, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &B))
        return std::move(E);
    if (llvm::Error E = finalize(*D, "finalizing tensor " + llvm::Twine(Uid)))
      return std::move(E);
    return D;
  }

  using Links = std::initializer_list<
      std::pair<cudnnBackendAttributeName_t, cudnnBackendDescriptor_t>>;

  /// A finalized descriptor of type T with the descriptor attributes L
  /// (null ones left unset); an operation joins Ops.
  llvm::Expected<cudnnBackendDescriptor_t>
  node(cudnnBackendDescriptorType_t T, Links L, const char *What, bool IsOp) {
    llvm::Expected<cudnnBackendDescriptor_t> D = create(T);
    if (!D)
      return D.takeError();
    for (auto [Attr, Value] : L)
      if (Value)
        if (llvm::Error E =
                set(*D, Attr, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &Value))
          return std::move(E);
    if (llvm::Error E = finalize(*D, llvm::Twine("finalizing ") + What))
      return std::move(E);
    if (IsOp)
      Ops.push_back(*D);
    return D;
  }

  /// A descriptor of type T whose attribute A (of type AT) is V, plus the
  /// compute type Prec under PrecAttr; not finalized.
  template <typename V>
  llvm::Expected<cudnnBackendDescriptor_t>
  described(cudnnBackendDescriptorType_t T, cudnnBackendAttributeName_t A,
            cudnnBackendAttributeType_t AT, V Value,
            cudnnBackendAttributeName_t PrecAttr, cudnnDataType_t Prec) {
    llvm::Expected<cudnnBackendDescriptor_t> D = create(T);
    if (!D)
      return D.takeError();
    if (llvm::Error E = set(*D, A, AT, 1, &Value))
      return std::move(E);
    if (llvm::Error E = set(*D, PrecAttr, CUDNN_TYPE_DATA_TYPE, 1, &Prec))
      return std::move(E);
    return D;
  }

  /// Y = mode(X[, B[, T]]), computed in Prec (GEN_INDEX along Axis).
  llvm::Error pointwise(cudnnPointwiseMode_t Mode, cudnnBackendDescriptor_t X,
                        cudnnBackendDescriptor_t B, cudnnBackendDescriptor_t T,
                        cudnnBackendDescriptor_t Y,
                        cudnnDataType_t Prec = CUDNN_DATA_FLOAT,
                        int64_t Axis = -1) {
    auto Pw = described(CUDNN_BACKEND_POINTWISE_DESCRIPTOR,
                        CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE,
                        Mode, CUDNN_ATTR_POINTWISE_MATH_PREC, Prec);
    if (!Pw)
      return Pw.takeError();
    if (Axis >= 0)
      if (llvm::Error E =
              set(*Pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &Axis))
        return E;
    return pointwiseOp(*Pw, X, B, T, Y);
  }

  /// Y = mode(X[, B[, T]]) by pointwise descriptor Pw, created by the
  /// caller with the attributes its mode takes, finalized here.
  llvm::Error pointwiseOp(cudnnBackendDescriptor_t Pw,
                          cudnnBackendDescriptor_t X,
                          cudnnBackendDescriptor_t B,
                          cudnnBackendDescriptor_t T,
                          cudnnBackendDescriptor_t Y) {
    if (llvm::Error E = finalize(Pw, "finalizing a pointwise descriptor"))
      return E;
    return node(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
                {{CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, Pw},
                 {CUDNN_ATTR_OPERATION_POINTWISE_XDESC, X},
                 {CUDNN_ATTR_OPERATION_POINTWISE_BDESC, B},
                 {CUDNN_ATTR_OPERATION_POINTWISE_TDESC, T},
                 {CUDNN_ATTR_OPERATION_POINTWISE_YDESC, Y}},
                "a pointwise operation", true)
        .takeError();
  }

  /// Y = reduce(X) over the dims where Y has 1.
  llvm::Error reduction(cudnnReduceTensorOp_t Mode, cudnnBackendDescriptor_t X,
                        cudnnBackendDescriptor_t Y) {
    auto R = described(CUDNN_BACKEND_REDUCTION_DESCRIPTOR,
                       CUDNN_ATTR_REDUCTION_OPERATOR,
                       CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, Mode,
                       CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT);
    if (!R)
      return R.takeError();
    if (llvm::Error E = finalize(*R, "finalizing a reduction descriptor"))
      return E;
    return node(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR,
                {{CUDNN_ATTR_OPERATION_REDUCTION_DESC, *R},
                 {CUDNN_ATTR_OPERATION_REDUCTION_XDESC, X},
                 {CUDNN_ATTR_OPERATION_REDUCTION_YDESC, Y}},
                "a reduction operation", true)
        .takeError();
  }

  /// C = A B (batched over the leading dims), fp32 accumulation.
  llvm::Error matmul(cudnnBackendDescriptor_t A, cudnnBackendDescriptor_t B,
                     cudnnBackendDescriptor_t C) {
    llvm::Expected<cudnnBackendDescriptor_t> M =
        create(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    if (!M)
      return M.takeError();
    cudnnDataType_t F = CUDNN_DATA_FLOAT;
    if (llvm::Error E =
            set(*M, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &F))
      return E;
    if (llvm::Error E = finalize(*M, "finalizing a matmul descriptor"))
      return E;
    return node(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR,
                {{CUDNN_ATTR_OPERATION_MATMUL_ADESC, A},
                 {CUDNN_ATTR_OPERATION_MATMUL_BDESC, B},
                 {CUDNN_ATTR_OPERATION_MATMUL_CDESC, C},
                 {CUDNN_ATTR_OPERATION_MATMUL_DESC, *M}},
                "a matmul operation", true)
        .takeError();
  }

  std::vector<cudnnBackendDescriptor_t> Ops;
};

/// The operation graph of G's operations on H, finalized.
llvm::Expected<cudnnBackendDescriptor_t>
finishGraph(GraphBuilder &G, cudnnHandle_t H, const llvm::Twine &What);

/// The first engine configuration cuDNN's heuristics (mode A, then the
/// fallback list) offer for Graph that finalizes into an execution plan on
/// H, or with Only >= 0 exactly configuration Only of mode A's list;
/// EngineId gets its global index (-1 if unknown).
llvm::Expected<DnnDescriptor> planFor(GraphBuilder &G,
                                      cudnnBackendDescriptor_t Graph,
                                      cudnnHandle_t H, int64_t &EngineId,
                                      int64_t Only = -1);

/// Runs Plan on H with the tensors Uids bound to Ptrs.
llvm::Error executePlan(cudnnHandle_t H, cudnnBackendDescriptor_t Plan,
                        llvm::ArrayRef<int64_t> Uids,
                        llvm::ArrayRef<void *> Ptrs, void *Workspace,
                        const llvm::Twine &What);

/// The workspace bytes Plan needs.
llvm::Expected<size_t> planWorkspace(cudnnBackendDescriptor_t Plan);

} // namespace solder

#endif
