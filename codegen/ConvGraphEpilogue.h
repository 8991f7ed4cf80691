//===- ConvGraphEpilogue.h - A conv group as one cuDNN graph ----*- C++ -*-===//
//
// cudnnConvolutionBiasActivationForward takes a fixed epilogue (bias,
// residual, ReLU); the rest of a convolution group (a Clip, a SiLU, an
// activation after the residual) runs as one more generated kernel that
// reads the convolution's result back. cuDNN's backend graph API takes the
// convolution followed by a DAG of pointwise operations as one operation
// graph, which its runtime-fusion engines run as one kernel. This file
// lowers a contraction group to that graph, or says why it cannot:
//
//   anchor   a 2-D forward Conv in NHWC of f16/bf16 (runtime fusion takes
//            NHWC reduced types only); its own bias is the first Add
//   chain    every later body node an op with a cuDNN pointwise mode:
//            Add Sub Mul Div Max Min (two operands), Relu LeakyRelu Clip
//            (ReLU with clips; Clip's bounds constant), Sigmoid Tanh Elu
//            Gelu Softplus Exp Log Neg Abs Sqrt Reciprocal Erf, and
//            HardSigmoid / HardSwish written out in those
//   operands chain values (virtual: never written), group operands and
//            constants of any shape that broadcasts to the result (read
//            from memory), constant scalars of binary ops (by value)
//
// Whether an engine takes the graph is cuDNN's to say when the plan loads;
// tuning offers the group only where one does (runtime/cuda/GemmTuning.h).
// Tensors are described in NCHW order with NHWC strides, as the legacy
// call's are.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_CODEGEN_CONVGRAPHEPILOGUE_H
#define SOLDER_CODEGEN_CONVGRAPHEPILOGUE_H

#include "ir/DType.h"
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace solder {

class Node;
class Value;

/// The cuDNN pointwise modes a graph uses (mapped to cudnnPointwiseMode_t
/// by the runtime, so plans do not depend on cuDNN's numbering).
enum class ConvPointwise : uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  Max,
  Min,
  Relu, ///< clamp to [Lower, Upper], Slope below Lower (LeakyRelu)
  Sigmoid,
  Tanh,
  Elu, ///< alpha in Slope
  Gelu,
  GeluTanh,
  Softplus, ///< beta 1
  Exp,
  Log,
  Neg,
  Abs,
  Sqrt,
  Reciprocal,
  Erf,
};
constexpr uint8_t ConvPointwiseLast = uint8_t(ConvPointwise::Erf);

/// "add", "relu", ... for reports.
const char *convPointwiseName(ConvPointwise M);
/// Whether M takes a second operand.
bool convPointwiseBinary(ConvPointwise M);

/// One tensor of the graph. Tensor 0 is the convolution's result.
struct ConvGraphTensor {
  enum class Kind : uint8_t {
    Virtual, ///< computed and consumed inside the engine
    Operand, ///< read from memory (a group operand or constant)
    Scalar,  ///< a constant passed by value (f32)
    Output,  ///< the group's result, written to memory
  };
  Kind K = Kind::Virtual;
  DType Elem = DType::F32;
  /// NCHW-ordered dims and element strides (Scalar: all 1).
  std::array<int64_t, 4> Dims = {1, 1, 1, 1}, Strides = {1, 1, 1, 1};
  float ByValue = 0.0f; ///< Scalar only
};

/// Y = Mode(X[, B]) over tensors of the graph.
struct ConvGraphOp {
  ConvPointwise Mode = ConvPointwise::Add;
  int32_t X = 0, B = -1, Y = 0;
  /// Relu: clamps and the slope below Lower; Elu: alpha in Slope.
  float Lower = 0.0f, Upper = 0.0f, Slope = 0.0f;
};

/// The graph of one contraction group, or why there is none.
struct ConvGraphLowering {
  /// The Conv; null when the group cannot be lowered (Why says why).
  const Node *Anchor = nullptr;
  std::string Why;
  std::vector<ConvGraphTensor> Tensors;
  /// Per tensor, the body value an Operand tensor reads (null otherwise).
  std::vector<const Value *> Reads;
  /// In dataflow order; the last one writes the Output tensor.
  std::vector<ConvGraphOp> Ops;
  /// "cuDNN graph conv+add+relu(clip 0..6)", for reports.
  std::string Description;
};

/// The lowering of a FusedGroup node of kind contraction.
ConvGraphLowering lowerConvGraph(const Node &Group);

} // namespace solder

#endif
