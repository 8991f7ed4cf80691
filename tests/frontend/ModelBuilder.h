//===- ModelBuilder.h - Small ONNX models built in C++ for tests -*- C++
//-*-===//
//
// Builds ModelProtos through the onnx protobuf API (inputs, initializers,
// nodes with attributes, opset imports) and imports them, so each frontend
// test states its model in a few lines.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TESTS_FRONTEND_MODELBUILDER_H
#define SOLDER_TESTS_FRONTEND_MODELBUILDER_H

#include "frontend/OnnxImporter.h"
#include "frontend/TensorProto.h"
#include "ir/Graph.h"
#include "llvm/ADT/StringExtras.h"
#include "gtest/gtest.h"
#include <string>
#include <vector>

namespace solder {
namespace testing {

class ModelBuilder {
public:
  explicit ModelBuilder(int64_t Opset) {
    M.set_ir_version(Opset >= 13 ? 7 : 3);
    auto *OI = M.add_opset_import();
    OI->set_domain("");
    OI->set_version(Opset);
    G = M.mutable_graph();
    G->set_name("test");
  }

  /// Dims: "3" static, "N" symbol, "" anonymous dynamic dim.
  onnx::ValueInfoProto &input(const std::string &Name,
                              std::vector<std::string> Dims,
                              int32_t Elem = onnx::TensorProto::FLOAT) {
    auto *VI = G->add_input();
    VI->set_name(Name);
    auto *TT = VI->mutable_type()->mutable_tensor_type();
    TT->set_elem_type(Elem);
    auto *S = TT->mutable_shape();
    for (const std::string &D : Dims) {
      auto *Dim = S->add_dim();
      int64_t V;
      if (D.empty())
        continue;
      if (!llvm::StringRef(D).getAsInteger(10, V))
        Dim->set_dim_value(V);
      else
        Dim->set_dim_param(D);
    }
    return *VI;
  }
  void output(const std::string &Name) { G->add_output()->set_name(Name); }

  onnx::TensorProto &initializer(const std::string &Name, const Tensor &T) {
    auto *TP = G->add_initializer();
    onnximport::tensorToProto(T, Name, *TP);
    return *TP;
  }
  onnx::TensorProto &initInt64s(const std::string &Name,
                                std::vector<int64_t> V) {
    return initializer(Name, Tensor::fromInt64s(V));
  }
  onnx::TensorProto &initFloats(const std::string &Name, std::vector<float> V,
                                std::vector<int64_t> Dims) {
    return initializer(Name, Tensor::fromFloats(V, Dims));
  }

  onnx::NodeProto &node(const std::string &Op, std::vector<std::string> Ins,
                        std::vector<std::string> Outs,
                        const std::string &Name = "") {
    auto *N = G->add_node();
    N->set_op_type(Op);
    N->set_name(Name);
    for (auto &I : Ins)
      N->add_input(I);
    for (auto &O : Outs)
      N->add_output(O);
    return *N;
  }

  std::string bytes() const { return M.SerializeAsString(); }
  llvm::Expected<std::unique_ptr<Graph>> import(const ImportOptions &O = {},
                                                llvm::StringRef Dir = "") {
    return importOnnxBytes(bytes(), Dir, O);
  }

  onnx::ModelProto M;
  onnx::GraphProto *G;
};

inline onnx::AttributeProto &addAttr(onnx::NodeProto &N,
                                     const std::string &Name) {
  auto *A = N.add_attribute();
  A->set_name(Name);
  return *A;
}
inline void setInt(onnx::NodeProto &N, const std::string &Name, int64_t V) {
  auto &A = addAttr(N, Name);
  A.set_type(onnx::AttributeProto::INT);
  A.set_i(V);
}
inline void setFloat(onnx::NodeProto &N, const std::string &Name, float V) {
  auto &A = addAttr(N, Name);
  A.set_type(onnx::AttributeProto::FLOAT);
  A.set_f(V);
}
inline void setString(onnx::NodeProto &N, const std::string &Name,
                      const std::string &V) {
  auto &A = addAttr(N, Name);
  A.set_type(onnx::AttributeProto::STRING);
  A.set_s(V);
}
inline void setInts(onnx::NodeProto &N, const std::string &Name,
                    std::vector<int64_t> V) {
  auto &A = addAttr(N, Name);
  A.set_type(onnx::AttributeProto::INTS);
  for (int64_t X : V)
    A.add_ints(X);
}
inline void setFloats(onnx::NodeProto &N, const std::string &Name,
                      std::vector<float> V) {
  auto &A = addAttr(N, Name);
  A.set_type(onnx::AttributeProto::FLOATS);
  for (float X : V)
    A.add_floats(X);
}
inline void setTensor(onnx::NodeProto &N, const std::string &Name,
                      const Tensor &T) {
  auto &A = addAttr(N, Name);
  A.set_type(onnx::AttributeProto::TENSOR);
  onnximport::tensorToProto(T, "", *A.mutable_t());
}

/// The nodes of G, in order, as op names joined by spaces: "Flatten Softmax".
inline std::string opSequence(const Graph &G) {
  std::vector<std::string> Names;
  for (const auto &N : G.nodes())
    Names.push_back(N->opName().str());
  return llvm::join(Names, " ");
}

inline Node *firstNode(const Graph &G, OpKind K) {
  for (const auto &N : G.nodes())
    if (N->kind() == K)
      return N.get();
  return nullptr;
}

/// The elements of a constant value as doubles (empty if not a constant).
inline std::vector<double> constValues(const Value *V) {
  std::vector<double> R;
  if (!V || !V->constant())
    return R;
  for (int64_t I = 0; I < V->constant()->numElements(); ++I)
    R.push_back(V->constant()->getDouble(I));
  return R;
}

/// Imports and fails the test with the error text if import fails.
#define ASSERT_IMPORTS(Var, Builder, ...)                                      \
  auto Var##OrErr = (Builder).import(__VA_ARGS__);                             \
  ASSERT_TRUE(bool(Var##OrErr)) << llvm::toString(Var##OrErr.takeError());     \
  Graph &Var = **Var##OrErr

/// The error message of a failed import ("" if it succeeded).
template <typename T> std::string errorText(llvm::Expected<T> R) {
  if (R)
    return "";
  return llvm::toString(R.takeError());
}

} // namespace testing
} // namespace solder

#endif
