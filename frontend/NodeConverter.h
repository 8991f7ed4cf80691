//===- NodeConverter.h - Converts one ONNX node to IR nodes -----*- C++ -*-===//
//
// Internal to the frontend. NodeConverter is shared by the opset
// conversions (OpsetConversion.cpp) and the lowerings of ONNX ops that have
// no IR op of their own (OpLowering.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_FRONTEND_NODECONVERTER_H
#define SOLDER_FRONTEND_NODECONVERTER_H

#include "frontend/ImportContext.h"
#include "frontend/LoweredOps.h"
#include "frontend/OpsetConversion.h"
#include "ir/OpRegistry.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace solder {
namespace onnximport {

using onnx::AttributeProto;
using onnx::NodeProto;

/// "float", "ints"... for messages.
llvm::StringRef attrTypeName(int T);
/// The attribute's type; models from IR version 1 may leave the field unset,
/// in which case the populated value field tells.
int attrType(const AttributeProto &A);

/// Converts one ONNX node. Attribute getters mark attributes consumed and
/// record the first problem in Err; whatever is left unconsumed at the end
/// is copied through the op registry's attribute specs.
class NodeConverter {
public:
  NodeConverter(ImportContext &C, NodeProto &NP, OpKind Kind, int64_t Version)
      : C(C), NP(NP), Kind(Kind), Version(Version) {
    for (int I = 0; I < NP.attribute_size(); ++I)
      Attrs[NP.attribute(I).name()] = NP.mutable_attribute(I);
    for (const std::string &In : NP.input())
      Operands.push_back(In.empty() ? nullptr : C.graph().lookup(In));
  }

  llvm::Error run();

private:
  ImportContext &C;
  NodeProto &NP;
  OpKind Kind;
  int64_t Version;
  llvm::StringMap<AttributeProto *> Attrs;
  llvm::StringSet<> Consumed;
  llvm::SmallVector<Value *, 4> Operands;
  AttrMap Out; // canonical attributes set explicitly by conversions
  std::string Err;

  std::string describe() const {
    return describeOnnxNode(NP) + " (" + NP.op_type() + "-" +
           std::to_string(Version) + ")";
  }
  llvm::Error error(const llvm::Twine &Msg) const {
    return makeError(describe() + ": " + Msg);
  }
  void fail(const std::string &Msg) {
    if (Err.empty())
      Err = Msg;
  }
  /// Base for generated value names: the node name or its first output.
  std::string base() const {
    if (!NP.name().empty())
      return NP.name();
    return NP.output_size() ? NP.output(0) : std::string("node");
  }

  AttributeProto *take(llvm::StringRef Name, int Want) {
    auto It = Attrs.find(Name);
    if (It == Attrs.end())
      return nullptr;
    Consumed.insert(Name);
    int T = attrType(*It->second);
    if (T != Want) {
      fail(("attribute '" + Name + "' is a " + attrTypeName(T) +
            ", expected a " + attrTypeName(Want))
               .str());
      return nullptr;
    }
    return It->second;
  }
  bool has(llvm::StringRef Name) const { return Attrs.count(Name); }
  void drop(llvm::StringRef Name) { Consumed.insert(Name); }
  int64_t getInt(llvm::StringRef Name, int64_t Default) {
    AttributeProto *A = take(Name, AttributeProto::INT);
    return A ? A->i() : Default;
  }
  float getFloat(llvm::StringRef Name, float Default) {
    AttributeProto *A = take(Name, AttributeProto::FLOAT);
    return A ? A->f() : Default;
  }
  std::optional<std::vector<int64_t>> getInts(llvm::StringRef Name) {
    AttributeProto *A = take(Name, AttributeProto::INTS);
    if (!A)
      return std::nullopt;
    return std::vector<int64_t>(A->ints().begin(), A->ints().end());
  }

  Value *operand(unsigned I) const {
    return I < Operands.size() ? Operands[I] : nullptr;
  }
  /// Output names; an absent ("") output in the middle gets a fresh name
  /// and trailing absent ones are left off unless KeepAll.
  std::vector<std::string> resultNames(bool KeepAll = false) const {
    std::vector<std::string> R(NP.output().begin(), NP.output().end());
    if (!KeepAll)
      while (!R.empty() && R.back().empty())
        R.pop_back();
    return R;
  }

  llvm::Error copyRemainingAttrs(OpKind K);
  llvm::Expected<Node *> emit(OpKind K, llvm::ArrayRef<Value *> Ops,
                              llvm::ArrayRef<std::string> Results);
  llvm::Error emitMain(llvm::ArrayRef<Value *> Ops,
                       llvm::ArrayRef<std::string> Results) {
    auto N = emit(Kind, Ops, Results);
    return N ? llvm::Error::success() : N.takeError();
  }
  llvm::Error emitDefault() { return emitMain(Operands, resultNames()); }

  llvm::Error checkLegacyBroadcast();
  llvm::Error convertClip();
  llvm::Error convertAttention();
  llvm::Error convertAxesAttr(bool Required);
  llvm::Error convertSplit();
  llvm::Error convertSlice1();
  llvm::Error convertPad();
  llvm::Error convertReshape1();
  llvm::Error convertBatchNorm();
  llvm::Error convertSoftmax();
  llvm::Error convertPReluLegacy();
  llvm::Error convertDropout();
  llvm::Error convertCast();
  llvm::Error convertOneHot9();
  llvm::Error convertResize10(Value *Scales);
  llvm::Error convertResize();
  llvm::Error convertTopK();
  llvm::Error lowerUpsample();

  // Ops with no IR op of their own, rewritten into IR ops
  // (frontend/OpLowering.cpp).
  llvm::Error lowerDepthToSpace();
  llvm::Error lowerSpaceToDepth();
  llvm::Error lowerGroupNorm(bool Instance);
  llvm::Error lowerEinsum();
  /// Reshape V to Like's shape (a constant when static, else Shape(Like)).
  llvm::Expected<Value *> reshapeLike(Value *V, Value *Like,
                                      const std::string &Result);
  /// Transpose X to Perm (nothing for the identity) and reshape to Dims.
  llvm::Expected<Value *> arrange(Value *X, llvm::ArrayRef<int64_t> Perm,
                                  llvm::ArrayRef<int64_t> Dims,
                                  const std::string &Result = "");
  llvm::Expected<Value *> emitOne(OpKind K, llvm::ArrayRef<Value *> Ops,
                                  const std::string &Result = "");
  /// Reshape X to Dims (0 copies X's dim, -1 is inferred), named Result
  /// (fresh when empty).
  llvm::Expected<Value *> reshapeTo(Value *X, llvm::ArrayRef<int64_t> Dims,
                                    const std::string &Result);
  llvm::Expected<Value *> transposeTo(Value *X, llvm::ArrayRef<int64_t> Perm);
};

} // namespace onnximport
} // namespace solder

#endif
