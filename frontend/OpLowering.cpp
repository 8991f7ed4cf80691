//===- OpLowering.cpp - ONNX ops rewritten into other IR ops --------------===//
//
// ONNX ops that are exactly a composition of IR ops are imported as that
// composition rather than given IR ops, kernels and code generation of
// their own:
//
//   DepthToSpace (DCR)  x[N,C,H,W] -> Reshape [N, b, b, C/b^2, H, W]
//                                  -> Transpose (0, 3, 4, 1, 5, 2)
//                                  -> Reshape [N, C/b^2, H*b, W*b]
//   DepthToSpace (CRD)  x[N,C,H,W] -> Reshape [N, C/b^2, b, b, H, W]
//                                  -> Transpose (0, 1, 4, 2, 5, 3)
//                                  -> Reshape [N, C/b^2, H*b, W*b]
//   SpaceToDepth        x[N,C,H,W] -> Reshape [N, C, H/b, b, W/b, b]
//                                  -> Transpose (0, 3, 5, 1, 2, 4)
//                                  -> Reshape [N, C*b^2, H/b, W/b]
//
// These are the definitions in the ONNX operator documents, so the result
// is exact; the loop fusion pass then makes each chain one gather kernel.
//
// InstanceNormalization is GroupNormalization with one group per channel,
// and GroupNormalization a LayerNormalization of each group's elements:
//
//   x[N,C,...] -> Reshape [N, G, -1] -> LayerNormalization (axis 2, scale 1,
//   epsilon, statistics in fp32) -> then the affine step per channel
//   (InstanceNormalization, GroupNormalization-21: Reshape back to x's
//   shape, Mul by scale[C,1,..], Add bias[C,1,..]) or per group
//   (GroupNormalization-18: Mul by scale[G,1], Add bias[G,1], Reshape back).
//
// LayerNormalization computes exactly (x - mean) / sqrt(var + epsilon) over
// its row, the ONNX formula, with the statistics in fp32 as stash_type=1
// asks. The reshape back and the Mul and Add become one loop kernel after
// the row kernel (loop fusion does not put a Reshape in a row kernel's
// epilogue).
//
//===----------------------------------------------------------------------===//
#include "frontend/LoweredOps.h"
#include "frontend/NodeConverter.h"

namespace solder {
namespace onnximport {

bool isLoweredOp(llvm::StringRef OpType) {
  return OpType == "DepthToSpace" || OpType == "SpaceToDepth" ||
         OpType == "InstanceNormalization" || OpType == "GroupNormalization" ||
         OpType == "Upsample" || OpType == "Scatter" || OpType == "Einsum";
}

llvm::Expected<Value *> NodeConverter::reshapeTo(Value *X,
                                                 llvm::ArrayRef<int64_t> Dims,
                                                 const std::string &Result) {
  Value *Shape = C.constInt64s(base() + ".shape", Dims);
  auto N = emit(OpKind::Reshape, {X, Shape},
                {Result.empty() ? C.freshName(base() + ".reshaped") : Result});
  if (!N)
    return N.takeError();
  return (*N)->result();
}

llvm::Expected<Value *>
NodeConverter::transposeTo(Value *X, llvm::ArrayRef<int64_t> Perm) {
  Out.set("perm", std::vector<int64_t>(Perm.begin(), Perm.end()));
  auto N = emit(OpKind::Transpose, {X}, {C.freshName(base() + ".transposed")});
  if (!N)
    return N.takeError();
  return (*N)->result();
}

namespace {
/// The dims of a rearrangement's NCHW input as Reshape targets: N, when
/// symbolic, becomes 0 (copy the input's dim) and one symbolic H or W the
/// -1 that Reshape infers; C must be known to split it.
struct BlockDims {
  int64_t N, C, H, W;
  bool HKnown, WKnown;
};
} // namespace

/// Checks the input and block size of DepthToSpace/SpaceToDepth.
static llvm::Expected<BlockDims> blockDims(const std::string &What, Value *X,
                                           int64_t Block) {
  if (!X)
    return makeError(What + ": has no input");
  const TensorType &T = X->type();
  if (T.rank() != 4)
    return makeError(What + ": input must have rank 4, got " + typeToString(T));
  if (Block <= 0)
    return makeError(What + ": blocksize must be positive, got " +
                     llvm::Twine(Block));
  const Shape &S = T.Dims;
  if (!S[1].isStatic())
    return makeError(What + ": the channel dim of " + typeToString(T) +
                     " must be static");
  if (!S[2].isStatic() && !S[3].isStatic())
    return makeError(What + ": height and width of " + typeToString(T) +
                     " cannot both be symbolic");
  BlockDims D{S[0].isStatic() ? S[0].size() : 0,
              S[1].size(),
              S[2].isStatic() ? S[2].size() : -1,
              S[3].isStatic() ? S[3].size() : -1,
              S[2].isStatic(),
              S[3].isStatic()};
  return D;
}

llvm::Error NodeConverter::lowerDepthToSpace() {
  int64_t Block = getInt("blocksize", 0);
  std::string Mode = "DCR";
  if (Version >= 11)
    if (AttributeProto *A = take("mode", AttributeProto::STRING))
      Mode = A->s();
  if (!Err.empty())
    return error(Err);
  if (!has("blocksize"))
    return error("has no 'blocksize' attribute");
  if (Mode != "DCR" && Mode != "CRD")
    return error("mode '" + Mode + "' is not DCR or CRD");
  auto D = blockDims(describe(), operand(0), Block);
  if (!D)
    return D.takeError();
  if (D->C % (Block * Block))
    return error("channels (" + llvm::Twine(D->C) +
                 ") are not a multiple of blocksize^2 (" +
                 llvm::Twine(Block * Block) + ")");
  int64_t C2 = D->C / (Block * Block);
  std::vector<int64_t> Split =
      Mode == "DCR" ? std::vector<int64_t>{D->N, Block, Block, C2, D->H, D->W}
                    : std::vector<int64_t>{D->N, C2, Block, Block, D->H, D->W};
  std::vector<int64_t> Perm = Mode == "DCR"
                                  ? std::vector<int64_t>{0, 3, 4, 1, 5, 2}
                                  : std::vector<int64_t>{0, 1, 4, 2, 5, 3};
  auto Sixd = reshapeTo(operand(0), Split, "");
  if (!Sixd)
    return Sixd.takeError();
  auto Moved = transposeTo(*Sixd, Perm);
  if (!Moved)
    return Moved.takeError();
  std::vector<std::string> Results = resultNames();
  if (Results.size() != 1)
    return error("must have one output");
  auto Y = reshapeTo(
      *Moved,
      {D->N, C2, D->HKnown ? D->H * Block : -1, D->WKnown ? D->W * Block : -1},
      Results[0]);
  return Y ? llvm::Error::success() : Y.takeError();
}

llvm::Error NodeConverter::lowerSpaceToDepth() {
  int64_t Block = getInt("blocksize", 0);
  if (!Err.empty())
    return error(Err);
  if (!has("blocksize"))
    return error("has no 'blocksize' attribute");
  auto D = blockDims(describe(), operand(0), Block);
  if (!D)
    return D.takeError();
  for (auto [Known, Size, Name] : {std::tuple{D->HKnown, D->H, "height"},
                                   std::tuple{D->WKnown, D->W, "width"}})
    if (Known && Size % Block)
      return error(llvm::Twine(Name) + " (" + llvm::Twine(Size) +
                   ") is not a multiple of blocksize (" + llvm::Twine(Block) +
                   ")");
  int64_t H2 = D->HKnown ? D->H / Block : -1;
  int64_t W2 = D->WKnown ? D->W / Block : -1;
  auto Sixd = reshapeTo(operand(0), {D->N, D->C, H2, Block, W2, Block}, "");
  if (!Sixd)
    return Sixd.takeError();
  auto Moved = transposeTo(*Sixd, {0, 3, 5, 1, 2, 4});
  if (!Moved)
    return Moved.takeError();
  std::vector<std::string> Results = resultNames();
  if (Results.size() != 1)
    return error("must have one output");
  auto Y = reshapeTo(*Moved, {D->N, D->C * Block * Block, H2, W2}, Results[0]);
  return Y ? llvm::Error::success() : Y.takeError();
}

llvm::Expected<Value *> NodeConverter::emitOne(OpKind K,
                                               llvm::ArrayRef<Value *> Ops,
                                               const std::string &Result) {
  std::string Name =
      Result.empty() ? C.freshName(base() + "." + opName(K).lower()) : Result;
  auto N = emit(K, Ops, {Name});
  if (!N)
    return N.takeError();
  return (*N)->result();
}

llvm::Expected<Value *> NodeConverter::reshapeLike(Value *V, Value *Like,
                                                   const std::string &Result) {
  // A static shape as a constant keeps the result's type static at import,
  // for the conversions of later nodes that need it.
  if (Like->type().isStatic()) {
    std::vector<int64_t> Dims;
    for (const Dim &D : Like->type().Dims)
      Dims.push_back(D.size());
    if (llvm::is_contained(Dims, 0))
      Dims.clear(); // a 0 would mean "copy"; go through Shape instead
    else
      return reshapeTo(V, Dims, Result);
  }
  auto Shp = emitOne(OpKind::Shape, {Like});
  if (!Shp)
    return Shp.takeError();
  return emitOne(OpKind::Reshape, {V, *Shp}, Result);
}

llvm::Error NodeConverter::lowerGroupNorm(bool Instance) {
  float Eps = getFloat("epsilon", 1e-5f);
  int64_t Groups = Instance ? 0 : getInt("num_groups", 0);
  int64_t Stash = Version >= 21 ? getInt("stash_type", 1) : 1;
  if (Instance && Version < 6)
    drop("is_test");
  if (!Err.empty())
    return error(Err);
  Value *X = operand(0), *Scale = operand(1), *Bias = operand(2);
  if (!X || !Scale || !Bias)
    return error("expects X, scale and bias");
  std::vector<std::string> Results = resultNames();
  if (Results.size() != 1)
    return error("must have one output");
  const TensorType &T = X->type();
  if (!isFloat(T.Elem))
    return error("expects a float input, got " + typeToString(T));
  if (T.rank() < 2)
    return error("input must have rank >= 2, got " + typeToString(T));
  if (!Instance && !has("num_groups"))
    return error("has no 'num_groups' attribute");
  // Scale and bias per channel, or per group for GroupNormalization-18.
  bool PerGroup = !Instance && Version < 21;
  const Dim &Channels = T.Dims[1];
  if (!Instance) {
    if (Groups <= 0)
      return error("num_groups must be positive, got " + llvm::Twine(Groups));
    if (Channels.isStatic() && Channels.size() % Groups)
      return error("channels (" + llvm::Twine(Channels.size()) +
                   ") are not a multiple of num_groups (" +
                   llvm::Twine(Groups) + ")");
  }
  for (Value *P : {Scale, Bias}) {
    const TensorType &PT = P->type();
    Dim Want = PerGroup ? Dim(Groups) : Channels;
    if (PT.rank() != 1 ||
        (Want.isStatic() && PT.Dims[0].isStatic() && PT.Dims[0] != Want))
      return error("scale and bias must have shape [" +
                   llvm::Twine(PerGroup ? "num_groups" : "C") + "], got " +
                   typeToString(PT));
  }

  // Rows of the LayerNormalization: [N, G, -1]; 0 copies N (and, for
  // InstanceNormalization, C).
  auto Rows = reshapeTo(X, {0, Instance ? 0 : Groups, -1}, "");
  if (!Rows)
    return Rows.takeError();
  Value *One = C.constScalar(base() + ".one", T.Elem, 1);
  Out.set("axis", int64_t(2));
  Out.set("epsilon", Eps);
  Out.set("stash_type", Stash);
  auto Norm = emitOne(OpKind::LayerNormalization, {*Rows, One});
  if (!Norm)
    return Norm.takeError();
  // The affine step: per group on the rows, or per channel on x's shape.
  Value *Normed = *Norm;
  std::vector<int64_t> ParamShape = {-1, 1};
  if (!PerGroup) {
    auto Back = reshapeLike(Normed, X, "");
    if (!Back)
      return Back.takeError();
    Normed = *Back;
    ParamShape.assign(T.rank() - 1, 1);
    ParamShape[0] = -1;
  }
  auto S = reshapeTo(Scale, ParamShape, "");
  if (!S)
    return S.takeError();
  auto B = reshapeTo(Bias, ParamShape, "");
  if (!B)
    return B.takeError();
  auto Scaled = emitOne(OpKind::Mul, {Normed, *S});
  if (!Scaled)
    return Scaled.takeError();
  if (!PerGroup) {
    auto Y = emitOne(OpKind::Add, {*Scaled, *B}, Results[0]);
    return Y ? llvm::Error::success() : Y.takeError();
  }
  auto Shifted = emitOne(OpKind::Add, {*Scaled, *B});
  if (!Shifted)
    return Shifted.takeError();
  auto Y = reshapeLike(*Shifted, X, Results[0]);
  return Y ? llvm::Error::success() : Y.takeError();
}

} // namespace onnximport
} // namespace solder
