//===- OpRegistry.cpp - One table describing every op
//----------------------===//
#include "ir/OpRegistry.h"
#include "ir/ops/InferFunctions.h"
#include "llvm/ADT/StringMap.h"

namespace solder {

namespace {
using K = AttrKind;
// Attribute specs, one array per op family. Names and kinds are ONNX's.
const AttrSpec AlphaAttrs[] = {{"alpha", K::Float}};
const AttrSpec SeluAttrs[] = {{"alpha", K::Float}, {"gamma", K::Float}};
const AttrSpec HardSigmoidAttrs[] = {{"alpha", K::Float}, {"beta", K::Float}};
const AttrSpec GeluAttrs[] = {{"approximate", K::String}};
const AttrSpec CastAttrs[] = {{"to", K::Int}, {"saturate", K::Int}};
const AttrSpec DropoutAttrs[] = {{"seed", K::Int}};
const AttrSpec BatchNormAttrs[] = {{"epsilon", K::Float},
                                   {"momentum", K::Float}};
const AttrSpec ReshapeAttrs[] = {{"allowzero", K::Int}};
const AttrSpec AxisAttrs[] = {{"axis", K::Int}};
const AttrSpec GatherNDAttrs[] = {{"batch_dims", K::Int}};
const AttrSpec TransposeAttrs[] = {{"perm", K::Ints}};
const AttrSpec SplitAttrs[] = {{"axis", K::Int}, {"num_outputs", K::Int}};
const AttrSpec PadAttrs[] = {{"mode", K::String}};
const AttrSpec ReduceAttrs[] = {{"keepdims", K::Int},
                                {"noop_with_empty_axes", K::Int}};
const AttrSpec ArgReduceAttrs[] = {
    {"axis", K::Int}, {"keepdims", K::Int}, {"select_last_index", K::Int}};
const AttrSpec LayerNormAttrs[] = {
    {"axis", K::Int}, {"epsilon", K::Float}, {"stash_type", K::Int}};
// layout: solder's channels-last variant, see ir/Layout.h.
const AttrSpec ConvAttrs[] = {
    {"auto_pad", K::String},   {"dilations", K::Ints}, {"group", K::Int},
    {"kernel_shape", K::Ints}, {"layout", K::String},  {"pads", K::Ints},
    {"strides", K::Ints}};
const AttrSpec ConvTransposeAttrs[] = {
    {"auto_pad", K::String},     {"dilations", K::Ints},
    {"group", K::Int},           {"kernel_shape", K::Ints},
    {"output_padding", K::Ints}, {"output_shape", K::Ints},
    {"pads", K::Ints},           {"strides", K::Ints}};
const AttrSpec GemmAttrs[] = {{"alpha", K::Float},
                              {"beta", K::Float},
                              {"transA", K::Int},
                              {"transB", K::Int}};
const AttrSpec MaxPoolAttrs[] = {
    {"auto_pad", K::String},   {"ceil_mode", K::Int}, {"dilations", K::Ints},
    {"kernel_shape", K::Ints}, {"layout", K::String}, {"pads", K::Ints},
    {"storage_order", K::Int}, {"strides", K::Ints}};
const AttrSpec AveragePoolAttrs[] = {{"auto_pad", K::String},
                                     {"ceil_mode", K::Int},
                                     {"count_include_pad", K::Int},
                                     {"dilations", K::Ints},
                                     {"kernel_shape", K::Ints},
                                     {"layout", K::String},
                                     {"pads", K::Ints},
                                     {"strides", K::Ints}};
const AttrSpec LRNAttrs[] = {{"alpha", K::Float},
                             {"beta", K::Float},
                             {"bias", K::Float},
                             {"size", K::Int}};
const AttrSpec ShapeAttrs[] = {{"start", K::Int}, {"end", K::Int}};
const AttrSpec ConstantOfShapeAttrs[] = {{"value", K::Tensor}};
const AttrSpec IsInfAttrs[] = {{"detect_negative", K::Int},
                               {"detect_positive", K::Int}};
const AttrSpec ModAttrs[] = {{"fmod", K::Int}};
const AttrSpec CumSumAttrs[] = {{"exclusive", K::Int}, {"reverse", K::Int}};
const AttrSpec TriluAttrs[] = {{"upper", K::Int}};
const AttrSpec TopKAttrs[] = {
    {"axis", K::Int}, {"largest", K::Int}, {"sorted", K::Int}};
const AttrSpec ScatterElementsAttrs[] = {{"axis", K::Int},
                                         {"reduction", K::String}};
const AttrSpec ScatterNDAttrs[] = {{"reduction", K::String}};
const AttrSpec ResizeAttrs[] = {{"antialias", K::Int},
                                {"axes", K::Ints},
                                {"coordinate_transformation_mode", K::String},
                                {"cubic_coeff_a", K::Float},
                                {"exclude_outside", K::Int},
                                {"extrapolation_value", K::Float},
                                {"keep_aspect_ratio_policy", K::String},
                                {"mode", K::String},
                                {"nearest_mode", K::String}};
const AttrSpec AttentionAttrs[] = {
    {"id", K::Int},          {"is_causal", K::Int},   {"kv_num_heads", K::Int},
    {"members", K::Strings}, {"q_num_heads", K::Int}, {"scale", K::Float}};
const AttrSpec FusedGroupAttrs[] = {
    {"id", K::Int}, {"kind", K::String}, {"members", K::Strings}};

template <size_t N> llvm::ArrayRef<AttrSpec> specs(const AttrSpec (&A)[N]) {
  return llvm::ArrayRef<AttrSpec>(A, N);
}
llvm::ArrayRef<AttrSpec> none() { return {}; }

struct Extra {
  llvm::ArrayRef<AttrSpec> Attrs;
  InferFn Infer;
  bool IsView = false;
  /// For injective ops: whether indexing composes (OpInfo). Elementwise
  /// and broadcast ops always compose.
  bool Composable = false;
};

// Per-op attributes and inference; the rest of each entry is in Ops.def.
Extra extraFor(OpKind Op) {
  using namespace infer;
  switch (Op) {
  case OpKind::Relu:
  case OpKind::Sigmoid:
  case OpKind::Tanh:
  case OpKind::HardSwish:
  case OpKind::Softplus:
  case OpKind::Softsign:
  case OpKind::Erf:
  case OpKind::Sqrt:
  case OpKind::Exp:
  case OpKind::Log:
  case OpKind::Neg:
  case OpKind::Reciprocal:
  case OpKind::Abs:
  case OpKind::Floor:
  case OpKind::Ceil:
  case OpKind::Round:
  case OpKind::Sign:
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Tan:
  case OpKind::Asin:
  case OpKind::Acos:
  case OpKind::Atan:
  case OpKind::Sinh:
  case OpKind::Cosh:
  case OpKind::Asinh:
  case OpKind::Acosh:
  case OpKind::Atanh:
  case OpKind::Mish:
    return {none(), sameAsFirst};
  case OpKind::IsNaN:
    return {none(), floatPredicate};
  case OpKind::IsInf:
    return {specs(IsInfAttrs), floatPredicate};
  case OpKind::LeakyRelu:
  case OpKind::Elu:
    return {specs(AlphaAttrs), sameAsFirst};
  case OpKind::Selu:
    return {specs(SeluAttrs), sameAsFirst};
  case OpKind::HardSigmoid:
    return {specs(HardSigmoidAttrs), sameAsFirst};
  case OpKind::Gelu:
    return {specs(GeluAttrs), sameAsFirst};
  case OpKind::Not:
    return {none(), logicalNot};
  case OpKind::Cast:
    return {specs(CastAttrs), cast};
  case OpKind::Dropout:
    return {specs(DropoutAttrs), dropout};
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Pow:
  case OpKind::Sum:
  case OpKind::Max:
  case OpKind::Min:
    return {none(), broadcastArith};
  case OpKind::Mod:
    return {specs(ModAttrs), mod};
  case OpKind::PRelu:
  case OpKind::Clip:
    return {none(), clipLike};
  case OpKind::BatchNormalization:
    return {specs(BatchNormAttrs), clipLike};
  case OpKind::Equal:
  case OpKind::Less:
  case OpKind::Greater:
  case OpKind::GreaterOrEqual:
  case OpKind::LessOrEqual:
    return {none(), broadcastCompare};
  case OpKind::And:
  case OpKind::Or:
    return {none(), broadcastLogical};
  case OpKind::Where:
    return {none(), where};
  case OpKind::ApplyRowStats:
    return {none(), applyRowStats};
  case OpKind::Identity:
    return {none(), sameAsFirst, true, true};
  case OpKind::Reshape:
    return {specs(ReshapeAttrs), reshape, true, true};
  case OpKind::Flatten:
    return {specs(AxisAttrs), flatten, true, true};
  case OpKind::Squeeze:
    return {none(), squeeze, true, true};
  case OpKind::Unsqueeze:
    return {none(), unsqueeze, true, true};
  case OpKind::Transpose:
    return {specs(TransposeAttrs), transpose, false, true};
  case OpKind::Concat:
    return {specs(AxisAttrs), concat, false, true};
  case OpKind::Split:
    return {specs(SplitAttrs), split};
  case OpKind::Slice:
    return {none(), slice, false, true};
  case OpKind::Gather:
    return {specs(AxisAttrs), gather, false, true};
  case OpKind::GatherElements:
    return {specs(AxisAttrs), gatherElements};
  case OpKind::GatherND:
    return {specs(GatherNDAttrs), gatherND};
  case OpKind::Expand:
    return {none(), expand, false, true};
  case OpKind::Tile:
    return {none(), tile};
  case OpKind::Pad:
    return {specs(PadAttrs), pad};
  case OpKind::Trilu:
    return {specs(TriluAttrs), trilu};
  case OpKind::ReduceMean:
  case OpKind::ReduceSum:
  case OpKind::ReduceMax:
  case OpKind::ReduceMin:
  case OpKind::ReduceProd:
  case OpKind::ReduceL1:
  case OpKind::ReduceL2:
  case OpKind::ReduceLogSum:
  case OpKind::ReduceLogSumExp:
  case OpKind::ReduceSumSquare:
    return {specs(ReduceAttrs), reduce};
  case OpKind::ArgMax:
  case OpKind::ArgMin:
    return {specs(ArgReduceAttrs), argReduce};
  case OpKind::Softmax:
  case OpKind::LogSoftmax:
    return {specs(AxisAttrs), sameAsFirst};
  case OpKind::LayerNormalization:
    return {specs(LayerNormAttrs), layerNorm};
  case OpKind::RMSNormalization:
    return {specs(LayerNormAttrs), rmsNorm};
  case OpKind::GlobalAveragePool:
  case OpKind::GlobalMaxPool:
    return {none(), globalPool};
  case OpKind::Conv:
    return {specs(ConvAttrs), conv};
  case OpKind::ConvTranspose:
    return {specs(ConvTransposeAttrs), convTranspose};
  case OpKind::MatMul:
    return {none(), matMul};
  case OpKind::Gemm:
    return {specs(GemmAttrs), gemm};
  case OpKind::MaxPool:
    return {specs(MaxPoolAttrs), pool};
  case OpKind::AveragePool:
    return {specs(AveragePoolAttrs), pool};
  case OpKind::LRN:
    return {specs(LRNAttrs), sameAsFirst};
  case OpKind::Shape:
    return {specs(ShapeAttrs), shape};
  case OpKind::ConstantOfShape:
    return {specs(ConstantOfShapeAttrs), constantOfShape};
  case OpKind::Range:
    return {none(), range};
  case OpKind::CumSum:
    return {specs(CumSumAttrs), cumSum};
  case OpKind::OneHot:
    return {specs(AxisAttrs), oneHot};
  case OpKind::Resize:
    return {specs(ResizeAttrs), resize};
  case OpKind::TopK:
    return {specs(TopKAttrs), topK};
  case OpKind::ScatterElements:
    return {specs(ScatterElementsAttrs), scatterElements};
  case OpKind::ScatterND:
    return {specs(ScatterNDAttrs), scatterND};
  case OpKind::Attention:
    return {specs(AttentionAttrs), attention};
  case OpKind::FusedGroup:
    return {specs(FusedGroupAttrs), fusedGroup};
  }
  return {none(), nullptr};
}

struct Table {
  OpInfo Infos[NumOpKinds];
  llvm::StringMap<OpKind> ByName;
  Table() {
    unsigned I = 0;
#define SOLDER_OP(Enum, Name, Fusion, MinIn, MaxIn, MinOut, MaxOut)            \
  {                                                                            \
    Extra E = extraFor(OpKind::Enum);                                          \
    FusionKind FK = FusionKind::Fusion;                                        \
    bool Composable = E.Composable || FK == FusionKind::Elementwise ||         \
                      FK == FusionKind::Broadcast;                             \
    Infos[I] =                                                                 \
        OpInfo{OpKind::Enum, Name,    FK,      MinIn,    MaxIn,     MinOut,    \
               MaxOut,       E.Attrs, E.Infer, E.IsView, Composable};          \
    ByName[Name] = OpKind::Enum;                                               \
    ++I;                                                                       \
  }
#include "ir/Ops.def"
  }
};

// Immutable after construction (thread-safe static init): not mutable
// global state.
const Table &table() {
  static const Table T;
  return T;
}
} // namespace

const OpInfo &getOpInfo(OpKind K) { return table().Infos[unsigned(K)]; }

bool isReduceOp(OpKind K) {
  switch (K) {
  case OpKind::ReduceMean:
  case OpKind::ReduceSum:
  case OpKind::ReduceMax:
  case OpKind::ReduceMin:
  case OpKind::ReduceProd:
  case OpKind::ReduceL1:
  case OpKind::ReduceL2:
  case OpKind::ReduceLogSum:
  case OpKind::ReduceLogSumExp:
  case OpKind::ReduceSumSquare:
    return true;
  default:
    return false;
  }
}

llvm::StringRef opName(OpKind K) { return getOpInfo(K).Name; }

std::optional<OpKind> lookupOp(llvm::StringRef Name) {
  auto It = table().ByName.find(Name);
  if (It == table().ByName.end())
    return std::nullopt;
  return It->second;
}

llvm::StringRef fusionKindName(FusionKind K) {
  switch (K) {
  case FusionKind::Elementwise:
    return "elementwise";
  case FusionKind::Broadcast:
    return "broadcast";
  case FusionKind::Injective:
    return "injective";
  case FusionKind::Reduction:
    return "reduction";
  case FusionKind::Contraction:
    return "contraction";
  case FusionKind::Opaque:
    return "opaque";
  }
  return "?";
}

const AttrSpec *findAttrSpec(const OpInfo &Info, llvm::StringRef Name) {
  for (const AttrSpec &S : Info.Attrs)
    if (Name == S.Name)
      return &S;
  return nullptr;
}

llvm::Error makeError(const llvm::Twine &Msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), Msg);
}

void InferContext::setResultType(unsigned I, TensorType T) {
  if (Value *R = N.result(I))
    R->setType(std::move(T));
}

llvm::Error InferContext::error(const llvm::Twine &Msg) const {
  return makeError(N.describe() + ": " + Msg);
}

static llvm::Error checkDims(const Node &N) {
  for (Value *R : N.results()) {
    if (!R)
      continue;
    int64_t Count = 1;
    for (const Dim &D : R->shape()) {
      if (!D.isStatic())
        continue;
      if (D.size() > MaxDimSize)
        return makeError(N.describe() + ": result '" + R->name() +
                         "' would have a dim of " + llvm::Twine(D.size()) +
                         ", above the limit of " + llvm::Twine(MaxDimSize));
      if (D.size() && Count > MaxElementCount / D.size())
        return makeError(N.describe() + ": result '" + R->name() +
                         "' would have more than " +
                         llvm::Twine(MaxElementCount) + " elements");
      Count *= D.size();
    }
  }
  return llvm::Error::success();
}

llvm::Error inferNodeTypes(Node &N) {
  const OpInfo &Info = getOpInfo(N.kind());
  unsigned NumOps = N.numOperands();
  if (NumOps < Info.MinOperands ||
      (Info.MaxOperands != VariadicCount && NumOps > Info.MaxOperands))
    return makeError(N.describe() + ": has " + llvm::Twine(NumOps) +
                     " operands, expected " + llvm::Twine(Info.MinOperands) +
                     (Info.MaxOperands == VariadicCount
                          ? llvm::Twine(" or more")
                          : llvm::Twine("..") + llvm::Twine(Info.MaxOperands)));
  for (unsigned I = 0; I < Info.MinOperands; ++I)
    if (!N.operand(I))
      return makeError(N.describe() + ": required operand " + llvm::Twine(I) +
                       " is missing");
  for (Value *O : N.operands())
    if (O && O->dtype() == DType::Undefined)
      return makeError(N.describe() + ": operand '" + O->name() +
                       "' has no type");
  InferContext C(N);
  if (auto E = Info.Infer(C))
    return E;
  return checkDims(N);
}

llvm::Error inferGraphTypes(Graph &G) {
  for (auto &N : G.nodes())
    if (auto E = inferNodeTypes(*N))
      return E;
  return llvm::Error::success();
}

} // namespace solder
