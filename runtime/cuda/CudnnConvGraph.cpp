//===- CudnnConvGraph.cpp - A conv and its epilogue as one cuDNN graph ----===//
#include "runtime/cuda/CudnnConvGraph.h"
#include "runtime/cuda/CudaSupport.h"
#include "llvm/ADT/Twine.h"
#include <cfloat>
#include <cstring>

using namespace llvm;

namespace solder {

namespace {

// Unique ids: the convolution's operands, then one per graph tensor.
enum : int64_t { UidX = 1, UidW = 2, UidTensor0 = 16 };

cudnnPointwiseMode_t dnnMode(ConvPointwise M) {
  switch (M) {
  case ConvPointwise::Add:
    return CUDNN_POINTWISE_ADD;
  case ConvPointwise::Sub:
    return CUDNN_POINTWISE_SUB;
  case ConvPointwise::Mul:
    return CUDNN_POINTWISE_MUL;
  case ConvPointwise::Div:
    return CUDNN_POINTWISE_DIV;
  case ConvPointwise::Max:
    return CUDNN_POINTWISE_MAX;
  case ConvPointwise::Min:
    return CUDNN_POINTWISE_MIN;
  case ConvPointwise::Relu:
    return CUDNN_POINTWISE_RELU_FWD;
  case ConvPointwise::Sigmoid:
    return CUDNN_POINTWISE_SIGMOID_FWD;
  case ConvPointwise::Tanh:
    return CUDNN_POINTWISE_TANH_FWD;
  case ConvPointwise::Elu:
    return CUDNN_POINTWISE_ELU_FWD;
  case ConvPointwise::Gelu:
    return CUDNN_POINTWISE_GELU_FWD;
  case ConvPointwise::GeluTanh:
    return CUDNN_POINTWISE_GELU_APPROX_TANH_FWD;
  case ConvPointwise::Softplus:
    return CUDNN_POINTWISE_SOFTPLUS_FWD;
  case ConvPointwise::Exp:
    return CUDNN_POINTWISE_EXP;
  case ConvPointwise::Log:
    return CUDNN_POINTWISE_LOG;
  case ConvPointwise::Neg:
    return CUDNN_POINTWISE_NEG;
  case ConvPointwise::Abs:
    return CUDNN_POINTWISE_ABS;
  case ConvPointwise::Sqrt:
    return CUDNN_POINTWISE_SQRT;
  case ConvPointwise::Reciprocal:
    return CUDNN_POINTWISE_RECIPROCAL;
  case ConvPointwise::Erf:
    return CUDNN_POINTWISE_ERF;
  }
  return CUDNN_POINTWISE_IDENTITY;
}

/// NCHW-ordered dims with NHWC element strides (KRSC for a filter).
std::vector<int64_t> nhwcStrides(ArrayRef<int64_t> D) {
  int64_t C = D[1], H = D[2], W = D[3];
  return {H * W * C, 1, W * C, C};
}

Error setFloat(cudnnBackendDescriptor_t D, cudnnBackendAttributeName_t A,
               float V) {
  return GraphBuilder::set(D, A, CUDNN_TYPE_FLOAT, 1, &V);
}

/// One pointwise operation O of the graph on tensors T.
Error pointwise(GraphBuilder &G, const ConvGraphOp &O,
                ArrayRef<cudnnBackendDescriptor_t> T) {
  Expected<cudnnBackendDescriptor_t> Pw =
      G.described(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, CUDNN_ATTR_POINTWISE_MODE,
                  CUDNN_TYPE_POINTWISE_MODE, dnnMode(O.Mode),
                  CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_DATA_FLOAT);
  if (!Pw)
    return Pw.takeError();
  if (O.Mode == ConvPointwise::Relu) {
    if (Error E = setFloat(*Pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, O.Lower))
      return E;
    if (O.Upper < FLT_MAX)
      if (Error E =
              setFloat(*Pw, CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, O.Upper))
        return E;
    if (Error E =
            setFloat(*Pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE, O.Slope))
      return E;
  } else if (O.Mode == ConvPointwise::Elu) {
    if (Error E = setFloat(*Pw, CUDNN_ATTR_POINTWISE_ELU_ALPHA, O.Slope))
      return E;
  } else if (O.Mode == ConvPointwise::Softplus) {
    if (Error E = setFloat(*Pw, CUDNN_ATTR_POINTWISE_SOFTPLUS_BETA, 1.0f))
      return E;
  }
  return G.pointwiseOp(*Pw, T[O.X], O.B >= 0 ? T[O.B] : nullptr, nullptr,
                       T[O.Y]);
}

/// The operation graph of C on H.
Expected<cudnnBackendDescriptor_t>
buildGraph(GraphBuilder &G, const ConvConfig &C, cudnnHandle_t H) {
  cudnnDataType_t Io = dnnType(C.Elem), F = CUDNN_DATA_FLOAT;
  auto X = G.tensor(UidX, Io, C.XDims, nhwcStrides(C.XDims), false);
  if (!X)
    return X.takeError();
  auto W = G.tensor(UidW, Io, C.WDims, nhwcStrides(C.WDims), false);
  if (!W)
    return W.takeError();
  std::vector<cudnnBackendDescriptor_t> T;
  using Kind = ConvGraphTensor::Kind;
  for (size_t I = 0; I < C.GraphTensors.size(); ++I) {
    const ConvGraphTensor &D = C.GraphTensors[I];
    int64_t Uid = UidTensor0 + int64_t(I);
    Expected<cudnnBackendDescriptor_t> Desc =
        D.K == Kind::Virtual
            ? G.tensor(Uid, F, D.Dims, D.Strides, /*Virtual=*/true)
        : D.K == Kind::Scalar
            ? G.tensor(Uid, F, D.Dims, D.Strides, false, /*ByValue=*/true)
            : G.tensor(Uid, dnnType(D.Elem), D.Dims, D.Strides, false);
    if (!Desc)
      return Desc.takeError();
    T.push_back(*Desc);
  }
  // The convolution: cross-correlation as ONNX's Conv, f32 accumulation.
  Expected<cudnnBackendDescriptor_t> Conv =
      G.described(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR,
                  CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE,
                  CUDNN_CROSS_CORRELATION, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, F);
  if (!Conv)
    return Conv.takeError();
  int64_t Spatial = int64_t(C.Pads.size());
  std::vector<int64_t> Pads(C.Pads.begin(), C.Pads.end()),
      Strides(C.Strides.begin(), C.Strides.end()),
      Dil(C.Dilations.begin(), C.Dilations.end());
  if (Error E = G.set(*Conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS,
                      CUDNN_TYPE_INT64, 1, &Spatial))
    return std::move(E);
  for (auto [Attr, V] :
       {std::make_pair(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, &Pads),
        std::make_pair(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, &Pads),
        std::make_pair(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, &Strides),
        std::make_pair(CUDNN_ATTR_CONVOLUTION_DILATIONS, &Dil)})
    if (Error E = G.set(*Conv, Attr, CUDNN_TYPE_INT64, V->size(), V->data()))
      return std::move(E);
  if (Error E = G.finalize(*Conv, "finalizing the convolution descriptor"))
    return std::move(E);
  Expected<cudnnBackendDescriptor_t> Op =
      G.create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  if (!Op)
    return Op.takeError();
  for (auto [Attr, V] :
       {std::make_pair(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, *X),
        std::make_pair(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, *W),
        std::make_pair(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, T[0]),
        std::make_pair(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                       *Conv)})
    if (Error E = G.set(*Op, Attr, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &V))
      return std::move(E);
  if (Error E =
          setFloat(*Op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, 1.0f))
    return std::move(E);
  if (Error E =
          setFloat(*Op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, 0.0f))
    return std::move(E);
  if (Error E = G.finalize(*Op, "finalizing the convolution operation"))
    return std::move(E);
  G.Ops.push_back(*Op);
  for (const ConvGraphOp &O : C.GraphOps)
    if (Error E = pointwise(G, O, T))
      return std::move(E);
  return finishGraph(G, H, "finalizing the convolution graph");
}

} // namespace

std::string convGraphPlanKey(const ConvConfig &C) {
  std::string K = dtypeName(C.Elem).str();
  auto Add = [&](int64_t X) { K += " " + std::to_string(X); };
  for (const auto *V : {&C.XDims, &C.WDims, &C.YDims})
    for (int64_t X : *V)
      Add(X);
  for (const auto *V : {&C.Pads, &C.Strides, &C.Dilations})
    for (int X : *V)
      Add(X);
  auto AddFloat = [&](float F) {
    uint32_t Bits;
    std::memcpy(&Bits, &F, sizeof(Bits));
    Add(Bits);
  };
  Add(C.GraphEngine);
  K += " |";
  for (const ConvGraphTensor &T : C.GraphTensors) {
    Add(int64_t(T.K));
    Add(int64_t(T.Elem));
    for (int64_t X : T.Dims)
      Add(X);
    for (int64_t X : T.Strides)
      Add(X);
    AddFloat(T.ByValue);
  }
  K += " |";
  for (const ConvGraphOp &O : C.GraphOps) {
    for (int64_t X :
         {int64_t(O.Mode), int64_t(O.X), int64_t(O.B), int64_t(O.Y)})
      Add(X);
    for (float F : {O.Lower, O.Upper, O.Slope})
      AddFloat(F);
  }
  return K;
}

std::string convLabel(const Plan &P, size_t Index) {
  for (const PlanStep &S : P.Steps)
    if (S.K == PlanStep::Kind::Conv && S.Index == Index)
      return S.Label;
  return "convolution " + std::to_string(Index);
}

Error ConvGraphCall::init(const ConvConfig &C, cudnnHandle_t H) {
  Config = &C;
  if (!C.Graph)
    return createStringError(inconvertibleErrorCode(),
                             "not a convolution graph");
  Scalars.assign(C.GraphTensors.size(), 0.0f);
  for (size_t I = 0; I < C.GraphTensors.size(); ++I)
    Scalars[I] = C.GraphTensors[I].ByValue;
  GraphBuilder G;
  Expected<cudnnBackendDescriptor_t> Ops = buildGraph(G, C, H);
  if (!Ops)
    return createStringError(inconvertibleErrorCode(),
                             "cuDNN cannot run this convolution graph: " +
                                 toString(Ops.takeError()));
  int64_t EngineId = -1;
  Expected<DnnDescriptor> Plan = planFor(G, *Ops, H, EngineId, C.GraphEngine);
  if (!Plan && C.GraphEngine >= 0) {
    // The tuned configuration is not offered here (another cuDNN): the
    // heuristics' first.
    consumeError(Plan.takeError());
    Plan = planFor(G, *Ops, H, EngineId);
  }
  if (!Plan)
    return createStringError(inconvertibleErrorCode(),
                             "cuDNN cannot run this convolution graph: " +
                                 toString(Plan.takeError()));
  Graph = std::move(G.Owned);
  ExecPlan = std::move(*Plan);
  Expected<size_t> Ws = planWorkspace(ExecPlan.get());
  if (!Ws)
    return Ws.takeError();
  Workspace = *Ws;
  Description =
      "cuDNN graph (engine " + std::to_string(EngineId) +
      (C.GraphEngine >= 0 ? ", configuration " + std::to_string(C.GraphEngine)
                          : std::string()) +
      ")";
  return Error::success();
}

Error ConvGraphCall::enqueue(cudnnHandle_t H, const void *X, const void *W,
                             void *Y, ArrayRef<const void *> Reads,
                             void *Ws) const {
  const ConvConfig &C = *Config;
  std::vector<int64_t> Uids = {UidX, UidW};
  std::vector<void *> Ptrs = {const_cast<void *>(X), const_cast<void *>(W)};
  using Kind = ConvGraphTensor::Kind;
  for (size_t I = 0; I < C.GraphTensors.size(); ++I) {
    Kind K = C.GraphTensors[I].K;
    if (K == Kind::Virtual)
      continue;
    Uids.push_back(UidTensor0 + int64_t(I));
    Ptrs.push_back(K == Kind::Output   ? Y
                   : K == Kind::Scalar ? const_cast<float *>(&Scalars[I])
                                       : const_cast<void *>(Reads[I]));
  }
  return executePlan(H, ExecPlan.get(), Uids, Ptrs, Ws,
                     "cuDNN convolution graph");
}

} // namespace solder
