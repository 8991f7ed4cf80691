//===- OpsetConversion.cpp - ONNX op versions to canonical IR
//--------------===//
//
// Each ONNX node is resolved to the op version its model's opset selects
// (the largest since_version <= the opset) and rewritten into solder's
// canonical form, which is the op's opset-21 signature:
//   - attributes that later versions turned into inputs become constant
//     operands (Clip min/max, Squeeze/Unsqueeze/Reduce* axes, Split sizes,
//     Pad pads/value, Slice-1 starts/ends/axes, Reshape-1 shape);
//   - attributes that only meant something to old runtimes are dropped
//     (consumed_inputs, is_test, Dropout ratio, Gemm broadcast) or refused
//     when they change the result (BatchNormalization spatial=0, legacy
//     broadcasting that numpy broadcasting does not reproduce, training
//     mode);
//   - Softmax/LogSoftmax before 13 (coerce to 2-D at axis) become a Softmax
//     over the last axis, through Flatten + Reshape unless axis is already
//     the last one.
// All other attributes are copied when the op registry declares them and
// rejected otherwise, so nothing a newer or unusual model sets is silently
// ignored.
//
//===----------------------------------------------------------------------===//
#include "frontend/OpsetConversion.h"
#include "frontend/NodeConverter.h"
#include "frontend/TensorProto.h"
#include "ir/OpRegistry.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include <algorithm>
#include <cmath>

namespace solder {
namespace onnximport {

using onnx::AttributeProto;
using onnx::NodeProto;

namespace {
struct OpVersions {
  const char *Name;
  std::initializer_list<int64_t> Since;
};
} // namespace

/// since_versions of every supported op in the default domain (from the
/// ONNX 1.23 schemas).
static const OpVersions VersionTable[] = {
    {"Abs", {1, 6, 13}},
    {"Acos", {7, 22}},
    {"Acosh", {9, 22}},
    {"Add", {1, 6, 7, 13, 14}},
    {"And", {1, 7}},
    {"ArgMax", {1, 11, 12, 13}},
    {"ArgMin", {1, 11, 12, 13}},
    {"Asin", {7, 22}},
    {"Asinh", {9, 22}},
    {"Atan", {7, 22}},
    {"Atanh", {9, 22}},
    {"Attention", {23, 24}},
    {"AveragePool", {1, 7, 10, 11, 19, 22}},
    {"BatchNormalization", {1, 6, 7, 9, 14, 15}},
    {"Cast", {1, 6, 9, 13, 19, 21, 23, 24, 25, 28}},
    {"Ceil", {1, 6, 13}},
    {"Clip", {1, 6, 11, 12, 13}},
    {"Concat", {1, 4, 11, 13}},
    {"Constant", {1, 9, 11, 12, 13, 19, 21, 23, 24, 25}},
    {"ConstantOfShape", {9, 20, 21, 23, 24, 25}},
    {"Conv", {1, 11, 22}},
    {"ConvTranspose", {1, 11, 22}},
    {"Cos", {7, 22}},
    {"Cosh", {9, 22}},
    {"DepthToSpace", {1, 11, 13}},
    {"CumSum", {11, 14}},
    {"Div", {1, 6, 7, 13, 14}},
    {"Dropout", {1, 6, 7, 10, 12, 13, 22}},
    {"Einsum", {12}},
    {"Elu", {1, 6, 22}},
    {"Equal", {1, 7, 11, 13, 19}},
    {"Erf", {9, 13}},
    {"Exp", {1, 6, 13}},
    {"Expand", {8, 13}},
    {"Flatten", {1, 9, 11, 13, 21, 23, 24, 25}},
    {"Floor", {1, 6, 13}},
    {"Gather", {1, 11, 13}},
    {"GatherElements", {11, 13}},
    {"GatherND", {11, 12, 13}},
    {"Gelu", {20}},
    {"Gemm", {1, 6, 7, 9, 11, 13}},
    {"GlobalAveragePool", {1, 22}},
    {"GlobalMaxPool", {1, 22}},
    {"Greater", {1, 7, 9, 13}},
    {"GreaterOrEqual", {12, 16}},
    {"HardSigmoid", {1, 6, 22}},
    {"GroupNormalization", {18, 21}},
    {"HardSwish", {14, 22}},
    {"Identity", {1, 13, 14, 16, 19, 21, 23, 24, 25}},
    {"InstanceNormalization", {1, 6, 22}},
    {"IsInf", {10, 20}},
    {"IsNaN", {9, 13, 20}},
    {"LRN", {1, 13}},
    {"LayerNormalization", {17}},
    {"LeakyRelu", {1, 6, 16}},
    {"Less", {1, 7, 9, 13}},
    {"LessOrEqual", {12, 16}},
    {"Log", {1, 6, 13}},
    {"LogSoftmax", {1, 11, 13}},
    {"MatMul", {1, 9, 13}},
    {"Max", {1, 6, 8, 12, 13}},
    {"MaxPool", {1, 8, 10, 11, 12, 22}},
    {"Min", {1, 6, 8, 12, 13}},
    {"Mish", {18, 22}},
    {"Mod", {10, 13, 28}},
    {"Mul", {1, 6, 7, 13, 14}},
    {"Neg", {1, 6, 13}},
    {"Not", {1}},
    {"OneHot", {9, 11}},
    {"Or", {1, 7}},
    {"PRelu", {1, 6, 7, 9, 16}},
    {"Pad", {1, 2, 11, 13, 18, 19, 21, 23, 24, 25}},
    {"Pow", {1, 7, 12, 13, 15}},
    {"Range", {11, 27}},
    {"Reciprocal", {1, 6, 13}},
    {"ReduceL1", {1, 11, 13, 18}},
    {"ReduceL2", {1, 11, 13, 18}},
    {"ReduceLogSum", {1, 11, 13, 18}},
    {"ReduceLogSumExp", {1, 11, 13, 18}},
    {"ReduceMax", {1, 11, 12, 13, 18, 20}},
    {"ReduceMean", {1, 11, 13, 18}},
    {"ReduceMin", {1, 11, 12, 13, 18, 20}},
    {"ReduceProd", {1, 11, 13, 18}},
    {"ReduceSum", {1, 11, 13}},
    {"ReduceSumSquare", {1, 11, 13, 18}},
    {"RMSNormalization", {23}},
    {"Relu", {1, 6, 13, 14}},
    {"Reshape", {1, 5, 13, 14, 19, 21, 23, 24, 25}},
    {"Resize", {10, 11, 13, 18, 19}},
    {"Round", {11, 22}},
    {"Scatter", {9}},
    {"ScatterElements", {11, 13, 16, 18}},
    {"ScatterND", {11, 13, 16, 18}},
    {"Selu", {1, 6, 22}},
    {"Shape", {1, 13, 15, 19, 21, 23, 24, 25}},
    {"Sigmoid", {1, 6, 13}},
    {"Sign", {9, 13}},
    {"Sin", {7, 22}},
    {"Sinh", {9, 22}},
    {"Slice", {1, 10, 11, 13}},
    {"Softmax", {1, 11, 13}},
    {"Softplus", {1, 22}},
    {"Softsign", {1, 22}},
    {"SpaceToDepth", {1, 13}},
    {"Split", {1, 2, 11, 13, 18}},
    {"Sqrt", {1, 6, 13}},
    {"Squeeze", {1, 11, 13, 21, 23, 24, 25}},
    {"Sub", {1, 6, 7, 13, 14}},
    {"Sum", {1, 6, 8, 13}},
    {"Tan", {7, 22}},
    {"Tanh", {1, 6, 13}},
    {"Tile", {1, 6, 13}},
    {"TopK", {1, 10, 11}},
    {"Transpose", {1, 13, 21, 23, 24, 25}},
    {"Trilu", {14}},
    {"Unsqueeze", {1, 11, 13, 21, 23, 24, 25}},
    {"Upsample", {7, 9}},
    {"Where", {9, 16}},
};

bool isDefaultDomain(llvm::StringRef Domain) {
  return Domain.empty() || Domain == "ai.onnx";
}

int64_t resolveOpVersion(llvm::StringRef OpType, int64_t Opset) {
  for (const OpVersions &V : VersionTable) {
    if (OpType != V.Name)
      continue;
    int64_t Best = 0;
    for (int64_t S : V.Since)
      if (S <= Opset)
        Best = std::max(Best, S);
    return Best;
  }
  return 0;
}

std::string unsupportedOpLabel(const NodeProto &NP, int64_t Opset) {
  if (!isDefaultDomain(NP.domain()))
    return NP.domain() + "." + NP.op_type();
  if (NP.op_type().empty())
    return "<empty op_type>"; // the empty label means "supported"
  bool Known = NP.op_type() == "Constant" || lookupOp(NP.op_type()) ||
               isLoweredOp(NP.op_type());
  // Output shapes that depend on the data cannot be planned ahead: say so,
  // rather than leave it to look like a gap in the op set.
  static const char *const DataDependent[] = {"NonZero", "Unique", "Compress",
                                              "NonMaxSuppression"};
  if (!Known && llvm::is_contained(DataDependent, NP.op_type()))
    return NP.op_type() + " (data-dependent output shape)";
  if (!Known)
    return NP.op_type();
  if (resolveOpVersion(NP.op_type(), Opset) == 0)
    return NP.op_type() + " (not in opset " + std::to_string(Opset) + ")";
  return "";
}

std::string describeOnnxNode(const NodeProto &NP) {
  std::string S = NP.op_type() + " node";
  if (!NP.name().empty())
    S += " '" + NP.name() + "'";
  else if (NP.output_size() > 0 && !NP.output(0).empty())
    S += " producing '" + NP.output(0) + "'";
  return S;
}

llvm::StringRef attrTypeName(int T) {
  switch (T) {
  case AttributeProto::FLOAT:
    return "float";
  case AttributeProto::INT:
    return "int";
  case AttributeProto::STRING:
    return "string";
  case AttributeProto::TENSOR:
    return "tensor";
  case AttributeProto::GRAPH:
    return "graph";
  case AttributeProto::FLOATS:
    return "floats";
  case AttributeProto::INTS:
    return "ints";
  case AttributeProto::STRINGS:
    return "strings";
  case AttributeProto::SPARSE_TENSOR:
    return "sparse tensor";
  default:
    return "unsupported kind";
  }
}

/// The attribute's type; models from IR version 1 may leave the field unset,
/// in which case the populated value field tells.
int attrType(const AttributeProto &A) {
  if (A.type() != AttributeProto::UNDEFINED)
    return A.type();
  if (A.has_f())
    return AttributeProto::FLOAT;
  if (A.has_i())
    return AttributeProto::INT;
  if (A.has_s())
    return AttributeProto::STRING;
  if (A.has_t())
    return AttributeProto::TENSOR;
  if (A.has_g())
    return AttributeProto::GRAPH;
  if (A.floats_size())
    return AttributeProto::FLOATS;
  if (A.ints_size())
    return AttributeProto::INTS;
  if (A.strings_size())
    return AttributeProto::STRINGS;
  return AttributeProto::UNDEFINED;
}

llvm::Error NodeConverter::copyRemainingAttrs(OpKind K) {
  const OpInfo &Info = getOpInfo(K);
  for (auto &E : Attrs) {
    llvm::StringRef Name = E.first();
    if (Consumed.count(Name) || Out.has(Name))
      continue;
    AttributeProto &A = *E.second;
    const AttrSpec *Spec = findAttrSpec(Info, Name);
    if (!Spec)
      return error("attribute '" + Name + "' is not supported");
    int T = attrType(A);
    auto Mismatch = [&]() {
      return error("attribute '" + Name + "' is a " + attrTypeName(T) +
                   ", expected " + attrKindName(Spec->Kind));
    };
    switch (Spec->Kind) {
    case AttrKind::Int:
      if (T != AttributeProto::INT)
        return Mismatch();
      Out.set(Name, A.i());
      break;
    case AttrKind::Float:
      // Some exporters write whole-number floats as ints.
      if (T == AttributeProto::INT)
        Out.set(Name, float(A.i()));
      else if (T == AttributeProto::FLOAT)
        Out.set(Name, A.f());
      else
        return Mismatch();
      break;
    case AttrKind::String:
      if (T != AttributeProto::STRING)
        return Mismatch();
      Out.set(Name, A.s());
      break;
    case AttrKind::Ints:
      if (T != AttributeProto::INTS && T != AttributeProto::UNDEFINED)
        return Mismatch();
      Out.set(Name, std::vector<int64_t>(A.ints().begin(), A.ints().end()));
      break;
    case AttrKind::Floats:
      if (T != AttributeProto::FLOATS && T != AttributeProto::UNDEFINED)
        return Mismatch();
      Out.set(Name, std::vector<float>(A.floats().begin(), A.floats().end()));
      break;
    case AttrKind::Strings:
      if (T != AttributeProto::STRINGS && T != AttributeProto::UNDEFINED)
        return Mismatch();
      Out.set(Name,
              std::vector<std::string>(A.strings().begin(), A.strings().end()));
      break;
    case AttrKind::Tensor: {
      if (T != AttributeProto::TENSOR)
        return Mismatch();
      auto TT = tensorFromProto(*A.mutable_t(), C.baseDir(),
                                describe() + " attribute '" + Name + "'");
      if (!TT)
        return TT.takeError();
      Out.set(Name, std::move(*TT));
      break;
    }
    }
  }
  return llvm::Error::success();
}

llvm::Expected<Node *>
NodeConverter::emit(OpKind K, llvm::ArrayRef<Value *> Ops,
                    llvm::ArrayRef<std::string> Results) {
  if (!Err.empty())
    return error(Err);
  if (llvm::Error E = copyRemainingAttrs(K))
    return E;
  AttrMap A = std::move(Out);
  Out = AttrMap();
  return C.emit(K, Ops, Results, NP.name(), std::move(A));
}

/// Before opset 7, Add/Sub/Mul/Div/Pow and the comparisons broadcast only
/// when broadcast=1, aligning B to A at `axis` (default: the trailing dims).
/// That equals numpy broadcasting exactly when B aligns with A's trailing
/// dims and the result has A's shape; anything else is refused.
llvm::Error NodeConverter::checkLegacyBroadcast() {
  int64_t Broadcast = getInt("broadcast", 0);
  bool HasAxis = has("axis");
  int64_t Axis = getInt("axis", 0);
  if (!Err.empty())
    return error(Err);
  if (Broadcast == 0)
    return llvm::Error::success(); // equal shapes: no broadcasting involved
  Value *A = operand(0), *B = operand(1);
  if (!A || !B)
    return error("expects two inputs");
  const Shape &SA = A->shape(), &SB = B->shape();
  int64_t RA = SA.size(), RB = SB.size();
  if (HasAxis && Axis < 0)
    Axis += RA;
  Shape Bcast;
  std::string Why;
  bool Same = RB <= RA && (!HasAxis || Axis == RA - RB) &&
              broadcastShapes(SA, SB, Bcast, Why) && Bcast == SA;
  if (Same)
    return llvm::Error::success();
  return error("uses legacy broadcasting (broadcast=1" +
               (HasAxis ? ", axis=" + std::to_string(Axis) : std::string()) +
               ") of " + typeToString(A->type()) + " and " +
               typeToString(B->type()) +
               ", which differs from numpy-style broadcasting; solder does "
               "not support legacy broadcasting (re-export with opset >= 7)");
}

/// A scalar constant of X's type holding an old float attribute; refused
/// when the type cannot represent it (an integer tensor and 1e30).
static llvm::Expected<Value *> attrScalar(ImportContext &C,
                                          const std::string &Name, DType Elem,
                                          float V, const std::string &What) {
  if (!isFloat(Elem)) {
    double Lo = 0, Hi = 1; // bool
    if (isInteger(Elem)) {
      int Bits = int(dtypeSize(Elem)) * 8;
      // 2^63 - 1 is not a double; stay clear of it for 64-bit types.
      Hi = Bits == 64 ? 9.2e18 : std::ldexp(1.0, Bits - isSigned(Elem)) - 1;
      Lo = isSigned(Elem) ? -Hi - 1 : 0;
    }
    if (!(V >= Lo && V <= Hi) || V != std::trunc(V))
      return makeError(What + ": value " + std::to_string(V) +
                       " does not fit the input's type " +
                       dtypeName(Elem).str());
  }
  return C.constScalar(Name, Elem, V);
}

/// Clip-1/6: min and max attributes become scalar operands of X's type.
llvm::Error NodeConverter::convertClip() {
  if (Version >= 11)
    return emitDefault();
  Value *X = operand(0);
  if (!X)
    return error("has no input");
  Value *Bounds[2] = {nullptr, nullptr};
  const char *Names[2] = {"min", "max"};
  for (int I = 0; I < 2; ++I) {
    if (!has(Names[I]))
      continue;
    auto V = attrScalar(C, base() + "." + Names[I], X->dtype(),
                        getFloat(Names[I], 0), describe());
    if (!V)
      return V.takeError();
    Bounds[I] = *V;
  }
  return emitMain({X, Bounds[0], Bounds[1]}, resultNames());
}

/// Squeeze/Unsqueeze before 13, ReduceSum before 13, every other Reduce*
/// before 18: the `axes` attribute becomes the second operand.
llvm::Error NodeConverter::convertAxesAttr(bool Required) {
  bool AxesInputAt13 = Kind == OpKind::Squeeze || Kind == OpKind::Unsqueeze ||
                       Kind == OpKind::ReduceSum;
  int64_t NewIn = AxesInputAt13 ? 13 : 18;
  if (Version >= NewIn)
    return emitDefault();
  std::optional<std::vector<int64_t>> Axes = getInts("axes");
  if (!Axes && Required && Err.empty())
    return error("has no 'axes' attribute");
  Value *AxesV = Axes ? C.constInt64s(base() + ".axes", *Axes) : nullptr;
  return emitMain({operand(0), AxesV}, resultNames());
}

/// Split: sizes from the `split` attribute (before 13) become an operand;
/// without sizes the input is split equally into one part per output, which
/// the canonical form says with num_outputs.
llvm::Error NodeConverter::convertSplit() {
  Value *Sizes = operand(1);
  if (Version < 13) {
    std::optional<std::vector<int64_t>> S = getInts("split");
    if (S && !S->empty()) {
      if (Sizes)
        return error("has split sizes both as input and as attribute");
      Sizes = C.constInt64s(base() + ".split", *S);
    }
  }
  std::vector<std::string> Results = resultNames(/*KeepAll=*/true);
  if (!Sizes && !has("num_outputs"))
    Out.set("num_outputs", int64_t(Results.size()));
  return emitMain({operand(0), Sizes}, Results);
}

/// Slice-1: starts/ends/axes attributes become operands.
llvm::Error NodeConverter::convertSlice1() {
  std::optional<std::vector<int64_t>> Starts = getInts("starts"),
                                      Ends = getInts("ends"),
                                      Axes = getInts("axes");
  if (!Err.empty())
    return error(Err);
  if (!Starts || !Ends)
    return error("needs 'starts' and 'ends' attributes");
  Value *AxesV = Axes ? C.constInt64s(base() + ".axes", *Axes) : nullptr;
  return emitMain({operand(0), C.constInt64s(base() + ".starts", *Starts),
                   C.constInt64s(base() + ".ends", *Ends), AxesV},
                  resultNames());
}

/// Pad before 11: `pads` (Pad-1: `paddings`) and `value` attributes become
/// operands.
llvm::Error NodeConverter::convertPad() {
  if (Version >= 11)
    return emitDefault();
  Value *X = operand(0);
  if (!X)
    return error("has no input");
  std::optional<std::vector<int64_t>> Pads =
      getInts(Version == 1 ? "paddings" : "pads");
  if (!Err.empty())
    return error(Err);
  if (!Pads)
    return error(Version == 1 ? "has no 'paddings' attribute"
                              : "has no 'pads' attribute");
  Value *ValueV = nullptr;
  if (has("value")) {
    auto V = attrScalar(C, base() + ".value", X->dtype(), getFloat("value", 0),
                        describe());
    if (!V)
      return V.takeError();
    ValueV = *V;
  }
  return emitMain({X, C.constInt64s(base() + ".pads", *Pads), ValueV},
                  resultNames());
}

/// Reshape-1: the `shape` attribute becomes the operand.
llvm::Error NodeConverter::convertReshape1() {
  std::optional<std::vector<int64_t>> S = getInts("shape");
  if (!Err.empty())
    return error(Err);
  if (!S)
    return error("has no 'shape' attribute");
  return emitMain({operand(0), C.constInt64s(base() + ".shape", *S)},
                  resultNames());
}

/// Inference-mode BatchNormalization only; its one result is Y.
llvm::Error NodeConverter::convertBatchNorm() {
  if (Version < 9 && getInt("spatial", 1) != 1)
    return error("has spatial=0 (per-activation statistics), which solder "
                 "does not support");
  if (Version < 7)
    drop("is_test");
  if (Version >= 14 && getInt("training_mode", 0) != 0)
    return error("is in training mode (training_mode=1); solder compiles "
                 "inference graphs only");
  drop("momentum"); // only updates running statistics in training
  for (int I = 1; I < NP.output_size(); ++I)
    if (C.isRead(NP.output(I)))
      return error("output '" + NP.output(I) +
                   "' (running/saved statistics) is used: training mode is "
                   "not supported");
  llvm::SmallVector<Value *, 5> Ops(Operands.begin(), Operands.end());
  if (NP.output_size() == 0)
    return error("has no outputs");
  return emitMain(Ops, {NP.output(0)});
}

/// Softmax/LogSoftmax before 13 normalize the input coerced to 2-D
/// [prod(dims < axis), prod(dims >= axis)]. Opset 13 normalizes one axis.
/// When axis is the last dim both agree; otherwise flatten, normalize the
/// last axis and reshape back.
llvm::Error NodeConverter::convertSoftmax() {
  if (Version >= 13)
    return emitDefault();
  Value *X = operand(0);
  if (!X)
    return error("has no input");
  int64_t Axis = getInt("axis", 1);
  if (!Err.empty())
    return error(Err);
  int64_t R = X->type().rank();
  if (Axis < -R || Axis >= std::max<int64_t>(R, 1))
    return error("axis " + llvm::Twine(Axis) + " is out of range for " +
                 typeToString(X->type()));
  if (Axis < 0)
    Axis += R;
  std::vector<std::string> Results = resultNames();
  if (Results.size() != 1)
    return error("must have one output");
  if (R == 0 || Axis == R - 1) {
    Out.set("axis", int64_t(-1));
    return emitMain({X}, Results);
  }
  AttrMap Saved = std::move(Out);
  Out = AttrMap();
  Out.set("axis", Axis);
  auto Flat = emit(OpKind::Flatten, {X}, {C.freshName(base() + ".flat")});
  if (!Flat)
    return Flat.takeError();
  Out = std::move(Saved);
  Out.set("axis", int64_t(-1));
  auto Norm =
      emit(Kind, {(*Flat)->result()}, {C.freshName(base() + ".normalized")});
  if (!Norm)
    return Norm.takeError();
  auto Shp = emit(OpKind::Shape, {X}, {C.freshName(base() + ".shape")});
  if (!Shp)
    return Shp.takeError();
  auto Back =
      emit(OpKind::Reshape, {(*Norm)->result(), (*Shp)->result()}, Results);
  return Back ? llvm::Error::success() : Back.takeError();
}

/// Before opset 7, PRelu's slope of shape [C] is per channel (dim 1), not
/// numpy-broadcast against the last dim: a constant slope gets the trailing
/// unit dims that make numpy broadcasting mean the same.
llvm::Error NodeConverter::convertPReluLegacy() {
  Value *X = operand(0), *Slope = operand(1);
  if (!X || !Slope)
    return error("expects two inputs");
  const TensorType &XT = X->type(), &ST = Slope->type();
  bool PerChannel = ST.rank() == 1 && XT.rank() > 2 && ST.Dims[0].isStatic() &&
                    ST.Dims[0].size() != 1 && XT.Dims[1] == ST.Dims[0];
  if (!PerChannel)
    return emitDefault();
  const Tensor *T = Slope->constant();
  if (!T)
    return error("per-channel slope must be a constant before opset 7");
  llvm::SmallVector<int64_t, 4> Dims(XT.rank() - 1, 1);
  Dims[0] = T->numElements();
  Value *Reshaped =
      C.addConstant(Slope->name() + ".per_channel", T->reshaped(Dims));
  return emitMain({X, Reshaped}, resultNames());
}

/// Dropout is the identity at inference. Before 12 its ratio was an
/// attribute (dropped: it changes nothing at inference); from 12 on an
/// explicit training_mode=true is refused.
llvm::Error NodeConverter::convertDropout() {
  drop("seed");
  if (Version < 7)
    drop("is_test");
  if (Version < 12) {
    drop("ratio");
    return emitMain({operand(0)}, resultNames());
  }
  if (Value *TM = operand(2))
    if (const Tensor *T = TM->constant())
      if (T->numElements() == 1 && T->getDouble(0) != 0)
        return error("is in training mode (training_mode=true); solder "
                     "compiles inference graphs only");
  return emitDefault();
}

/// Cast `to` is a type name string before opset 6 ("FLOAT") and a
/// TensorProto.DataType number after; solder must support the target type.
llvm::Error NodeConverter::convertCast() {
  int64_t To = 0;
  auto It = Attrs.find("to");
  if (It == Attrs.end())
    return error("has no 'to' attribute");
  drop("to");
  const AttributeProto &A = *It->second;
  if (attrType(A) == AttributeProto::STRING) {
    onnx::TensorProto::DataType DT;
    if (!onnx::TensorProto::DataType_Parse(llvm::StringRef(A.s()).upper(), &DT))
      return error("'to' names an unknown type '" + A.s() + "'");
    To = DT;
  } else if (attrType(A) == AttributeProto::INT) {
    To = A.i();
  } else {
    return error("attribute 'to' is a " + attrTypeName(attrType(A)) +
                 ", expected an int");
  }
  if (To < INT32_MIN || To > INT32_MAX || !dtypeFromOnnx(int32_t(To)))
    return error("casts to " + onnxTypeName(int32_t(To)) +
                 ", which solder does not support");
  Out.set("to", To);
  return emitDefault();
}

/// OneHot-9 gives all off values for a negative index; from 11 on a
/// negative index counts from the end. Negative indices become -(depth + 1),
/// which is still out of range after that wrap, so OneHot-9's meaning stays.
llvm::Error NodeConverter::convertOneHot9() {
  Value *Idx = operand(0), *Depth = operand(1);
  int64_t Axis = getInt("axis", -1);
  if (!Err.empty())
    return error(Err);
  if (!Idx || !Depth || !operand(2))
    return error("expects indices, depth and values");
  if (isInteger(Idx->dtype()) && !isSigned(Idx->dtype())) {
    Out.set("axis", Axis);
    return emitDefault(); // no negative indices
  }
  const Tensor *DT = Depth->constant();
  if (!DT || DT->numElements() != 1)
    return error("depth must be a constant before opset 11 (negative "
                 "indices are rewritten at import)");
  auto Far = attrScalar(C, base() + ".out_of_range", Idx->dtype(),
                        -std::trunc(DT->getDouble(0)) - 1, describe());
  if (!Far)
    return Far.takeError();
  Value *Zero = C.constScalar(base() + ".zero", Idx->dtype(), 0);
  auto Neg = emit(OpKind::Less, {Idx, Zero}, {C.freshName(base() + ".neg")});
  if (!Neg)
    return Neg.takeError();
  auto Safe = emit(OpKind::Where, {(*Neg)->result(), *Far, Idx},
                   {C.freshName(base() + ".indices")});
  if (!Safe)
    return Safe.takeError();
  Out.set("axis", Axis);
  return emitMain({(*Safe)->result(), Depth, operand(2)}, resultNames());
}

/// Resize-10 (X, scales) and Upsample (scales an attribute before 9, an
/// input after) resize as x / scale, floored for nearest: opset 11's
/// asymmetric coordinates with nearest_mode floor.
llvm::Error NodeConverter::convertResize10(Value *Scales) {
  std::string Mode = "nearest";
  if (AttributeProto *A = take("mode", AttributeProto::STRING))
    Mode = A->s();
  if (!Err.empty())
    return error(Err);
  if (Mode != "nearest" && Mode != "linear")
    return error("mode '" + Mode + "' is not nearest or linear");
  if (!operand(0) || !Scales)
    return error("expects X and scales");
  Out.set("mode", Mode);
  Out.set("coordinate_transformation_mode", std::string("asymmetric"));
  Out.set("nearest_mode", std::string("floor"));
  // Named, not Kind: Upsample has no IR op of its own.
  auto N = emit(OpKind::Resize, {operand(0), nullptr, Scales, nullptr},
                resultNames());
  return N ? llvm::Error::success() : N.takeError();
}

/// Resize from 11 on: an empty constant roi, scales or sizes (opset 11
/// needed placeholders for the inputs before the one it meant) is absent.
llvm::Error NodeConverter::convertResize() {
  if (Version < 11)
    return convertResize10(operand(1));
  llvm::SmallVector<Value *, 4> Ops(Operands.begin(), Operands.end());
  for (size_t I = 1; I < Ops.size(); ++I)
    if (Ops[I] && Ops[I]->constant() && Ops[I]->constant()->numElements() == 0)
      Ops[I] = nullptr;
  return emitMain(Ops, resultNames());
}

llvm::Error NodeConverter::lowerUpsample() {
  if (Version >= 9)
    return convertResize10(operand(1));
  std::optional<std::vector<float>> Scales;
  if (AttributeProto *A = take("scales", AttributeProto::FLOATS))
    Scales = std::vector<float>(A->floats().begin(), A->floats().end());
  if (!Err.empty())
    return error(Err);
  if (!Scales)
    return error("has no 'scales' attribute");
  Value *S =
      C.addConstant(base() + ".scales",
                    Tensor::fromFloats(*Scales, {int64_t(Scales->size())}));
  return convertResize10(S);
}

/// TopK-1: k an attribute (an operand from 10); results are kept even when
/// only one is used.
llvm::Error NodeConverter::convertTopK() {
  Value *K = operand(1);
  if (Version < 10) {
    int64_t KAttr = getInt("k", -1);
    if (!Err.empty())
      return error(Err);
    if (KAttr < 0)
      return error("has no 'k' attribute");
    K = C.constInt64s(base() + ".k", {KAttr});
  }
  if (!operand(0) || !K)
    return error("expects X and K");
  return emitMain({operand(0), K}, resultNames());
}

/// Attention-23/24 without a KV cache: Q, K, V and the mask become solder's
/// Attention op (the same semantics; solder computes the softmax in fp32
/// whatever softmax_precision says). The cache inputs and outputs, the
/// pre-softmax output and softcap are refused by name.
llvm::Error NodeConverter::convertAttention() {
  static const char *const CacheInputs[] = {"past_key", "past_value",
                                            "nonpad_kv_seqlen"};
  for (int I = 4; I < NP.input_size(); ++I)
    if (!NP.input(I).empty())
      return error(llvm::Twine("input ") + CacheInputs[std::min(I - 4, 2)] +
                   " (a KV cache) is not supported");
  static const char *const ExtraOutputs[] = {"present_key", "present_value",
                                             "qk_matmul_output"};
  for (int I = 1; I < NP.output_size(); ++I)
    if (!NP.output(I).empty())
      return error(llvm::Twine("output ") + ExtraOutputs[std::min(I - 1, 2)] +
                   " is not supported");
  if (getFloat("softcap", 0.0f) != 0.0f)
    return error("softcap is not supported");
  drop("qk_matmul_output_mode"); // only shapes the output refused above
  drop("softmax_precision");     // solder's softmax is fp32 or wider
  // Only Y is left (the others were refused above), or nothing at all.
  std::vector<std::string> Names = resultNames();
  if (Names.empty())
    return error("has no output Y");
  llvm::SmallVector<Value *, 4> Ops(Operands.begin(),
                                    Operands.begin() +
                                        std::min<size_t>(Operands.size(), 4));
  return emitMain(Ops, Names);
}

llvm::Error NodeConverter::run() {
  // consumed_inputs (version 1 of many ops) only described in-place reuse
  // for old runtimes.
  if (Version < 6)
    drop("consumed_inputs");
  if (NP.op_type() == "DepthToSpace")
    return lowerDepthToSpace();
  if (NP.op_type() == "SpaceToDepth")
    return lowerSpaceToDepth();
  if (NP.op_type() == "Upsample")
    return lowerUpsample();
  if (NP.op_type() == "Einsum")
    return lowerEinsum();
  if (NP.op_type() == "Scatter") { // ScatterElements' old name (9, 10)
    auto N = emit(OpKind::ScatterElements, Operands, resultNames());
    return N ? llvm::Error::success() : N.takeError();
  }
  if (NP.op_type() == "InstanceNormalization")
    return lowerGroupNorm(/*Instance=*/true);
  if (NP.op_type() == "GroupNormalization")
    return lowerGroupNorm(/*Instance=*/false);
  if (isReduceOp(Kind))
    return convertAxesAttr(/*Required=*/false);
  switch (Kind) {
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Pow:
  case OpKind::Equal:
  case OpKind::Less:
  case OpKind::Greater:
  case OpKind::And:
  case OpKind::Or:
    if (Version < 7)
      if (llvm::Error E = checkLegacyBroadcast())
        return E;
    return emitDefault();
  case OpKind::Gemm:
    // Gemm's C broadcasts to [M, N] either way; the old flag changes nothing.
    if (Version < 7)
      drop("broadcast");
    return emitDefault();
  case OpKind::Clip:
    return convertClip();
  case OpKind::Attention:
    return convertAttention();
  case OpKind::Squeeze:
    return convertAxesAttr(/*Required=*/false);
  case OpKind::Unsqueeze:
    return convertAxesAttr(/*Required=*/true);
  case OpKind::Split:
    return convertSplit();
  case OpKind::Slice:
    return Version < 10 ? convertSlice1() : emitDefault();
  case OpKind::Pad:
    return convertPad();
  case OpKind::Reshape:
    return Version < 5 ? convertReshape1() : emitDefault();
  case OpKind::Tile:
    if (Version < 6)
      return error("Tile-1 (tiles and axis inputs) is not supported; "
                   "re-export with opset >= 6");
    return emitDefault();
  case OpKind::BatchNormalization:
    return convertBatchNorm();
  case OpKind::Softmax:
  case OpKind::LogSoftmax:
    return convertSoftmax();
  case OpKind::PRelu:
    return Version < 7 ? convertPReluLegacy() : emitDefault();
  case OpKind::Dropout:
    return convertDropout();
  case OpKind::Cast:
    return convertCast();
  case OpKind::OneHot:
    return Version < 11 ? convertOneHot9() : emitDefault();
  case OpKind::Resize:
    return convertResize();
  case OpKind::TopK:
    return convertTopK();
  case OpKind::Concat:
    if (Version < 4 && !has("axis"))
      Out.set("axis", int64_t(1)); // Concat-1's default
    return emitDefault();
  default:
    return emitDefault();
  }
}

/// A Constant node becomes a graph constant under its output's name.
static llvm::Error convertConstant(ImportContext &C, NodeProto &NP) {
  std::string What = describeOnnxNode(NP);
  if (NP.output_size() != 1)
    return makeError(What + ": must have one output");
  if (NP.attribute_size() != 1)
    return makeError(What + ": must have exactly one value attribute");
  AttributeProto &A = *NP.mutable_attribute(0);
  llvm::StringRef Name = A.name();
  Tensor T;
  if (Name == "value") {
    if (attrType(A) != AttributeProto::TENSOR)
      return makeError(What + ": 'value' is not a tensor");
    auto TT = tensorFromProto(*A.mutable_t(), C.baseDir(), What + " value");
    if (!TT)
      return TT.takeError();
    T = std::move(*TT);
  } else if (Name == "value_float") {
    T = Tensor::scalar(DType::F32, A.f());
  } else if (Name == "value_int") {
    // Not through Tensor::scalar: a double cannot hold every int64.
    T = Tensor(DType::I64, {});
    *T.mutableData<int64_t>() = A.i();
  } else if (Name == "value_floats") {
    std::vector<float> F(A.floats().begin(), A.floats().end());
    T = Tensor::fromFloats(F, {int64_t(F.size())});
  } else if (Name == "value_ints") {
    std::vector<int64_t> I(A.ints().begin(), A.ints().end());
    T = Tensor::fromInt64s(I);
  } else if (Name == "sparse_value") {
    return makeError(What + ": sparse constants are not supported");
  } else if (Name == "value_string" || Name == "value_strings") {
    return makeError(What + ": string constants are not supported");
  } else {
    return makeError(What + ": unknown attribute '" + Name + "'");
  }
  std::string Out =
      NP.output(0).empty() ? C.freshName("constant") : NP.output(0);
  C.graph().addConstant(Out, std::move(T));
  return llvm::Error::success();
}

llvm::Error convertNode(ImportContext &C, NodeProto &NP, int64_t Opset) {
  int64_t Version = resolveOpVersion(NP.op_type(), Opset);
  assert(Version > 0 && "unsupported ops are rejected before conversion");
  if (NP.op_type() == "Constant")
    return convertConstant(C, NP);
  std::optional<OpKind> Kind = lookupOp(NP.op_type());
  assert((Kind || isLoweredOp(NP.op_type())) &&
         "unknown ops are rejected before conversion");
  // A lowered op has no IR op of its own; its converter never reads Kind.
  NodeConverter Conv(C, NP, Kind.value_or(OpKind::Identity), Version);
  return Conv.run();
}

} // namespace onnximport
} // namespace solder
