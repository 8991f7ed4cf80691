//===- DnnGraph.cpp - Building cuDNN backend operation graphs -------------===//
#include "runtime/cuda/DnnGraph.h"
#include "runtime/cuda/CudaSupport.h"
#include <algorithm>
#include <string>

using namespace llvm;

namespace solder {

DnnDescriptor &DnnDescriptor::operator=(DnnDescriptor &&O) noexcept {
  if (this != &O) {
    if (D)
      cudaLibs().cudnnBackendDestroyDescriptor(D);
    D = O.D;
    O.D = nullptr;
  }
  return *this;
}

DnnDescriptor::~DnnDescriptor() {
  if (D)
    cudaLibs().cudnnBackendDestroyDescriptor(D);
}

Error dnnError(cudnnStatus_t S, const Twine &What) {
  char Detail[512] = {0};
  cudaLibs().cudnnGetLastErrorString(Detail, sizeof(Detail));
  std::string Msg = (What + ": " + cudaLibs().cudnnGetErrorString(S)).str();
  if (Detail[0])
    Msg += std::string(" (") + Detail + ")";
  return createStringError(inconvertibleErrorCode(), Msg);
}

cudnnDataType_t dnnType(DType T) {
  return T == DType::BF16  ? CUDNN_DATA_BFLOAT16
         : T == DType::F32 ? CUDNN_DATA_FLOAT
                           : CUDNN_DATA_HALF;
}

Expected<cudnnBackendDescriptor_t> finishGraph(GraphBuilder &G, cudnnHandle_t H,
                                               const Twine &What) {
  Expected<cudnnBackendDescriptor_t> Graph =
      G.create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  if (!Graph)
    return Graph.takeError();
  if (Error E =
          G.set(*Graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                CUDNN_TYPE_BACKEND_DESCRIPTOR, G.Ops.size(), G.Ops.data()))
    return std::move(E);
  if (Error E = G.set(*Graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
                      CUDNN_TYPE_HANDLE, 1, &H))
    return std::move(E);
  if (Error E = G.finalize(*Graph, What))
    return std::move(E);
  return Graph;
}

Expected<DnnDescriptor> planFor(GraphBuilder &G, cudnnBackendDescriptor_t Graph,
                                cudnnHandle_t H, int64_t &EngineId,
                                int64_t Only) {
  std::string Why = "cuDNN's heuristics offer no engine";
  for (cudnnBackendHeurMode_t Mode :
       {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    if (Only >= 0 && Mode != CUDNN_HEUR_MODE_A)
      break;
    Expected<cudnnBackendDescriptor_t> Heur =
        G.create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    if (!Heur)
      return Heur.takeError();
    if (Error E = G.set(*Heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &Graph))
      return std::move(E);
    if (Error E = G.set(*Heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE,
                        1, &Mode))
      return std::move(E);
    if (Error E = G.finalize(*Heur, "finalizing the engine heuristics")) {
      Why = toString(std::move(E));
      continue;
    }
    int64_t Count = 0;
    SOLDER_DNN_TRY(cudaLibs().cudnnBackendGetAttribute(
                       *Heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &Count, nullptr),
                   "counting the engine configurations");
    if (Count <= 0)
      continue;
    std::vector<cudnnBackendDescriptor_t> Cfgs;
    for (int64_t I = 0; I < Count; ++I) {
      Expected<cudnnBackendDescriptor_t> Cfg =
          G.create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
      if (!Cfg)
        return Cfg.takeError();
      Cfgs.push_back(*Cfg);
    }
    int64_t Got = 0;
    SOLDER_DNN_TRY(cudaLibs().cudnnBackendGetAttribute(
                       *Heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                       CUDNN_TYPE_BACKEND_DESCRIPTOR, Count, &Got, Cfgs.data()),
                   "reading the engine configurations");
    if (Only >= std::min(Got, Count))
      return createStringError(
          inconvertibleErrorCode(),
          "cuDNN's heuristics offer " + std::to_string(std::min(Got, Count)) +
              " engine configurations, not " + std::to_string(Only + 1));
    for (int64_t I = Only >= 0 ? Only : 0; I < std::min(Got, Count); ++I) {
      if (Only >= 0 && I != Only)
        break;
      cudnnBackendDescriptor_t Raw = nullptr;
      SOLDER_DNN_TRY(cudaLibs().cudnnBackendCreateDescriptor(
                         CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &Raw),
                     "creating an execution plan");
      DnnDescriptor Plan(Raw);
      if (Error E = G.set(Raw, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &Cfgs[I]))
        return std::move(E);
      if (Error E = G.set(Raw, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                          CUDNN_TYPE_HANDLE, 1, &H))
        return std::move(E);
      if (Error E = G.finalize(Raw, "finalizing an execution plan")) {
        Why = toString(std::move(E));
        continue;
      }
      // The engine's global index, for reports.
      cudnnBackendDescriptor_t Engine = nullptr;
      EngineId = -1;
      if (cudaLibs().cudnnBackendCreateDescriptor(
              CUDNN_BACKEND_ENGINE_DESCRIPTOR, &Engine) ==
          CUDNN_STATUS_SUCCESS) {
        DnnDescriptor Own(Engine);
        int64_t N = 0;
        if (cudaLibs().cudnnBackendGetAttribute(
                Cfgs[I], CUDNN_ATTR_ENGINECFG_ENGINE,
                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &N,
                &Engine) == CUDNN_STATUS_SUCCESS)
          cudaLibs().cudnnBackendGetAttribute(
              Engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &N,
              &EngineId);
      }
      return std::move(Plan);
    }
  }
  return createStringError(inconvertibleErrorCode(), Why);
}

Error executePlan(cudnnHandle_t H, cudnnBackendDescriptor_t Plan,
                  ArrayRef<int64_t> Uids, ArrayRef<void *> Ptrs,
                  void *Workspace, const Twine &What) {
  cudnnBackendDescriptor_t Raw = nullptr;
  SOLDER_DNN_TRY(cudaLibs().cudnnBackendCreateDescriptor(
                     CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &Raw),
                 "creating a variant pack");
  DnnDescriptor Pack(Raw);
  if (Error E = GraphBuilder::set(Raw, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                  CUDNN_TYPE_INT64, Uids.size(), Uids.data()))
    return E;
  if (Error E =
          GraphBuilder::set(Raw, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                            CUDNN_TYPE_VOID_PTR, Ptrs.size(), Ptrs.data()))
    return E;
  if (Error E = GraphBuilder::set(Raw, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                  CUDNN_TYPE_VOID_PTR, 1, &Workspace))
    return E;
  if (Error E = GraphBuilder::finalize(Raw, "finalizing the variant pack"))
    return E;
  SOLDER_DNN_TRY(cudaLibs().cudnnBackendExecute(H, Plan, Raw), What);
  return Error::success();
}

Expected<size_t> planWorkspace(cudnnBackendDescriptor_t Plan) {
  int64_t Ws = 0, N = 0;
  SOLDER_DNN_TRY(cudaLibs().cudnnBackendGetAttribute(
                     Plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                     CUDNN_TYPE_INT64, 1, &N, &Ws),
                 "reading an execution plan's workspace size");
  return size_t(std::max<int64_t>(Ws, 0));
}

} // namespace solder
