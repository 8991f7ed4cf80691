//===- ConvGraphEpilogue.cpp - A conv group as one cuDNN graph ------------===//
//
// Walks the body once in order. Each value the chain computes gets a
// virtual tensor; each value it reads from outside (a group operand or a
// constant) an operand tensor described over the result's dims with
// broadcast dims of extent 1; constant scalars of binary ops are passed by
// value. The first node that has no pointwise form ends the lowering with
// its name in Why: the group then keeps the legacy call.
//
//===----------------------------------------------------------------------===//
#include "codegen/ConvGraphEpilogue.h"
#include "ir/Graph.h"
#include "ir/Layout.h"
#include "ir/Tensor.h"
#include "llvm/ADT/DenseMap.h"
#include <cfloat>
#include <cstdio>

namespace solder {

const char *convPointwiseName(ConvPointwise M) {
  switch (M) {
  case ConvPointwise::Add:
    return "add";
  case ConvPointwise::Sub:
    return "sub";
  case ConvPointwise::Mul:
    return "mul";
  case ConvPointwise::Div:
    return "div";
  case ConvPointwise::Max:
    return "max";
  case ConvPointwise::Min:
    return "min";
  case ConvPointwise::Relu:
    return "relu";
  case ConvPointwise::Sigmoid:
    return "sigmoid";
  case ConvPointwise::Tanh:
    return "tanh";
  case ConvPointwise::Elu:
    return "elu";
  case ConvPointwise::Gelu:
    return "gelu";
  case ConvPointwise::GeluTanh:
    return "gelu-tanh";
  case ConvPointwise::Softplus:
    return "softplus";
  case ConvPointwise::Exp:
    return "exp";
  case ConvPointwise::Log:
    return "log";
  case ConvPointwise::Neg:
    return "neg";
  case ConvPointwise::Abs:
    return "abs";
  case ConvPointwise::Sqrt:
    return "sqrt";
  case ConvPointwise::Reciprocal:
    return "reciprocal";
  case ConvPointwise::Erf:
    return "erf";
  }
  return "?";
}

bool convPointwiseBinary(ConvPointwise M) {
  return M == ConvPointwise::Add || M == ConvPointwise::Sub ||
         M == ConvPointwise::Mul || M == ConvPointwise::Div ||
         M == ConvPointwise::Max || M == ConvPointwise::Min;
}

namespace {

/// Packed NHWC strides of NHWC dims D, both permuted into NCHW order.
void describeNhwc(const std::array<int64_t, 4> &D, ConvGraphTensor &T) {
  std::array<int64_t, 4> S;
  S[3] = 1;
  for (int I = 2; I >= 0; --I)
    S[I] = S[I + 1] * D[I + 1];
  for (int I = 0; I < 4; ++I) {
    T.Dims[I] = D[ToNchwPerm[I]];
    T.Strides[I] = S[ToNchwPerm[I]];
  }
}

class Lowering {
public:
  explicit Lowering(ConvGraphLowering &L) : L(L) {}

  bool run(const Node &Group);

private:
  ConvGraphLowering &L;
  const Node *Conv = nullptr;
  std::array<int64_t, 4> Result{}; ///< NHWC dims of the conv's result
  llvm::DenseMap<const Value *, int32_t> TensorOf;

  bool fail(std::string Why) {
    L.Anchor = nullptr;
    L.Why = std::move(Why);
    return false;
  }
  int32_t add(ConvGraphTensor T, const Value *Reads = nullptr) {
    L.Tensors.push_back(T);
    L.Reads.push_back(Reads);
    return int32_t(L.Tensors.size() - 1);
  }
  int32_t virtualTensor() {
    ConvGraphTensor T;
    describeNhwc(Result, T);
    return add(T);
  }
  int32_t scalar(float V) {
    ConvGraphTensor T;
    T.K = ConvGraphTensor::Kind::Scalar;
    T.ByValue = V;
    return add(T);
  }
  /// The tensor of V: the chain's own, or an operand read from memory
  /// (-1 when V does not broadcast to the result).
  int32_t operand(const Value *V);
  bool lowerNode(const Node &N);
  void op(ConvPointwise M, int32_t X, int32_t B, int32_t Y, float Lower = 0,
          float Upper = FLT_MAX, float Slope = 0) {
    ConvGraphOp O;
    O.Mode = M;
    O.X = X;
    O.B = B;
    O.Y = Y;
    O.Lower = Lower;
    O.Upper = Upper;
    O.Slope = Slope;
    L.Ops.push_back(O);
  }
};

int32_t Lowering::operand(const Value *V) {
  auto It = TensorOf.find(V);
  if (It != TensorOf.end())
    return It->second;
  if (V->producer() || !V->type().isStatic() || V->type().rank() > 4)
    return -1;
  auto D = V->type().staticDims();
  std::array<int64_t, 4> Nhwc = {1, 1, 1, 1};
  size_t Lead = 4 - D.size();
  for (size_t I = 0; I < D.size(); ++I) {
    if (D[I] != 1 && D[I] != Result[Lead + I])
      return -1;
    Nhwc[Lead + I] = D[I];
  }
  ConvGraphTensor T;
  T.K = ConvGraphTensor::Kind::Operand;
  T.Elem = V->dtype();
  describeNhwc(Nhwc, T);
  int32_t I = add(T, V);
  TensorOf[V] = I;
  return I;
}

bool Lowering::lowerNode(const Node &N) {
  std::string Name = N.describe();
  if (N.numResults() != 1 || !N.result(0))
    return fail(Name + " has more than one result");
  const Value *Y = N.result(0);
  if (!Y->type().isStatic() || Y->type().rank() != 4 ||
      llvm::ArrayRef<int64_t>(Y->type().staticDims()) !=
          llvm::ArrayRef<int64_t>(Result))
    return fail(Name + " does not keep the convolution's shape");
  if (Y->dtype() != Conv->result(0)->dtype())
    return fail(Name + " changes the element type");
  auto Chain = [&](unsigned I) -> int32_t {
    if (I >= N.numOperands() || !N.operand(I))
      return -1;
    auto It = TensorOf.find(N.operand(I));
    return It == TensorOf.end() ? -1 : It->second;
  };
  int32_t Out = virtualTensor();
  TensorOf[Y] = Out;
  auto Unary = [&](ConvPointwise M) {
    int32_t X = Chain(0);
    if (X < 0)
      return fail(Name + " reads no value the chain computes");
    op(M, X, -1, Out);
    return true;
  };
  switch (N.kind()) {
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Max:
  case OpKind::Min: {
    if (N.numOperands() != 2)
      return fail(Name + " does not have two operands");
    ConvPointwise M = N.kind() == OpKind::Add   ? ConvPointwise::Add
                      : N.kind() == OpKind::Sub ? ConvPointwise::Sub
                      : N.kind() == OpKind::Mul ? ConvPointwise::Mul
                      : N.kind() == OpKind::Div ? ConvPointwise::Div
                      : N.kind() == OpKind::Max ? ConvPointwise::Max
                                                : ConvPointwise::Min;
    int32_t A = Chain(0), B = Chain(1);
    if (A < 0 && B < 0)
      return fail(Name + " reads no value the chain computes");
    // The chain's value goes first; the other operand is read from memory
    // or passed by value. Sub and Div keep their order.
    auto Other = [&](unsigned I) -> int32_t {
      const Value *V = N.operand(I);
      if (std::optional<double> S = constScalar(V))
        return scalar(float(*S));
      return operand(V);
    };
    bool Commutes = M != ConvPointwise::Sub && M != ConvPointwise::Div;
    if (A < 0 && Commutes) {
      A = B;
      B = Other(0);
    } else if (A < 0) {
      A = Other(0);
    } else if (B < 0) {
      B = Other(1);
    }
    if (A < 0 || B < 0)
      return fail(Name + " reads an operand that does not broadcast to the "
                         "convolution's result");
    op(M, A, B, Out);
    return true;
  }
  case OpKind::Relu:
    return Unary(ConvPointwise::Relu);
  case OpKind::LeakyRelu: {
    if (!Unary(ConvPointwise::Relu))
      return false;
    L.Ops.back().Slope = N.attrs().getFloat("alpha", 0.01f);
    return true;
  }
  case OpKind::Clip: {
    // An absent bound clips nothing.
    double Lo = -FLT_MAX, Hi = FLT_MAX;
    if (N.numOperands() > 1 && N.operand(1)) {
      std::optional<double> V = constScalar(N.operand(1));
      if (!V)
        return fail(Name + ": the lower bound is not a constant scalar");
      Lo = *V;
    }
    if (N.numOperands() > 2 && N.operand(2)) {
      std::optional<double> V = constScalar(N.operand(2));
      if (!V)
        return fail(Name + ": the upper bound is not a constant scalar");
      Hi = *V;
    }
    if (!Unary(ConvPointwise::Relu))
      return false;
    L.Ops.back().Lower = float(Lo);
    L.Ops.back().Upper = float(Hi);
    return true;
  }
  case OpKind::Sigmoid:
    return Unary(ConvPointwise::Sigmoid);
  case OpKind::Tanh:
    return Unary(ConvPointwise::Tanh);
  case OpKind::Elu: {
    if (!Unary(ConvPointwise::Elu))
      return false;
    L.Ops.back().Slope = N.attrs().getFloat("alpha", 1.0f);
    return true;
  }
  case OpKind::Gelu:
    return Unary(N.attrs().getString("approximate", "none") == "tanh"
                     ? ConvPointwise::GeluTanh
                     : ConvPointwise::Gelu);
  case OpKind::Softplus:
    return Unary(ConvPointwise::Softplus);
  case OpKind::Exp:
    return Unary(ConvPointwise::Exp);
  case OpKind::Log:
    return Unary(ConvPointwise::Log);
  case OpKind::Neg:
    return Unary(ConvPointwise::Neg);
  case OpKind::Abs:
    return Unary(ConvPointwise::Abs);
  case OpKind::Sqrt:
    return Unary(ConvPointwise::Sqrt);
  case OpKind::Reciprocal:
    return Unary(ConvPointwise::Reciprocal);
  case OpKind::Erf:
    return Unary(ConvPointwise::Erf);
  case OpKind::HardSigmoid:
  case OpKind::HardSwish: {
    // max(0, min(1, alpha x + beta)) [times x]: mul, add, a clamp [, mul].
    int32_t X = Chain(0);
    if (X < 0)
      return fail(Name + " reads no value the chain computes");
    bool Swish = N.kind() == OpKind::HardSwish;
    float Alpha = Swish ? 1.0f / 6.0f : N.attrs().getFloat("alpha", 0.2f);
    float Beta = Swish ? 0.5f : N.attrs().getFloat("beta", 0.5f);
    int32_t Scaled = virtualTensor(), Shifted = virtualTensor();
    int32_t Clamped = Swish ? virtualTensor() : Out;
    op(ConvPointwise::Mul, X, scalar(Alpha), Scaled);
    op(ConvPointwise::Add, Scaled, scalar(Beta), Shifted);
    op(ConvPointwise::Relu, Shifted, -1, Clamped, 0.0f, 1.0f);
    if (Swish)
      op(ConvPointwise::Mul, X, Clamped, Out);
    return true;
  }
  default:
    return fail(Name + " has no cuDNN pointwise form");
  }
}

bool Lowering::run(const Node &Group) {
  const Graph *Body = Group.body();
  if (!Body || Group.numResults() != 1 || Body->outputs().size() != 1)
    return fail("the group has more than one result");
  auto It = Body->nodes().begin();
  if (It == Body->nodes().end() || (*It)->kind() != OpKind::Conv)
    return fail("the group does not start with a Conv");
  Conv = It->get();
  const Value *X = Conv->operand(0), *Y = Conv->result(0);
  if (!isNhwc(*Conv))
    return fail("the convolution is not NHWC (fp16/bf16 GPU plans only)");
  if (X->dtype() != DType::F16 && X->dtype() != DType::BF16)
    return fail("cuDNN's runtime fusion takes f16/bf16, not " +
                dtypeName(X->dtype()).str());
  if (!Y->type().isStatic() || Y->type().rank() != 4)
    return fail("the convolution is not 2-D with static dims");
  auto RD = Y->type().staticDims();
  for (int I = 0; I < 4; ++I)
    Result[I] = RD[I];
  L.Anchor = Conv;
  // Tensor 0: the convolution's result, accumulated in f32.
  TensorOf[Y] = virtualTensor();
  if (Conv->numOperands() > 2 && Conv->operand(2)) {
    int32_t B = operand(Conv->operand(2));
    if (B < 0)
      return fail("the convolution's bias does not broadcast");
    int32_t Out = virtualTensor();
    op(ConvPointwise::Add, 0, B, Out);
    // The biased value stands for the conv's result from here on.
    TensorOf[Y] = Out;
  }
  for (++It; It != Body->nodes().end(); ++It)
    if (!lowerNode(**It))
      return false;
  if (L.Ops.empty())
    return fail("nothing follows the convolution");
  if (TensorOf.lookup(Body->outputs()[0]) != L.Ops.back().Y)
    return fail("the group's result is not the chain's last value");
  // Every value but the last stays inside the engine: none may be read
  // after the group (its only result is the last).
  L.Tensors[L.Ops.back().Y].K = ConvGraphTensor::Kind::Output;
  L.Tensors[L.Ops.back().Y].Elem = Body->outputs()[0]->dtype();
  std::string D = "cuDNN graph conv";
  for (const ConvGraphOp &O : L.Ops) {
    D += std::string("+") + convPointwiseName(O.Mode);
    if (O.Mode == ConvPointwise::Relu &&
        (O.Lower != 0 || O.Upper != FLT_MAX || O.Slope != 0)) {
      char Buf[64];
      if (O.Slope != 0)
        std::snprintf(Buf, sizeof(Buf), "(slope %g)", double(O.Slope));
      else
        std::snprintf(Buf, sizeof(Buf), "(clip %g..%g)", double(O.Lower),
                      double(O.Upper));
      D += Buf;
    }
  }
  L.Description = D + " (runtime fusion)";
  return true;
}

} // namespace

ConvGraphLowering lowerConvGraph(const Node &Group) {
  ConvGraphLowering L;
  Lowering(L).run(Group);
  if (!L.Anchor) {
    L.Tensors.clear();
    L.Reads.clear();
    L.Ops.clear();
  }
  return L;
}

} // namespace solder
