//===- ImportContext.cpp - State shared while importing one model
//----------===//
//
// Fresh names that avoid every ONNX name, typed constants, and node
// emission with an operand/result count check and immediate shape
// inference, so malformed nodes become errors instead of assertions.
//
//===----------------------------------------------------------------------===//
#include "frontend/ImportContext.h"
#include "ir/OpRegistry.h"

namespace solder {
namespace onnximport {

std::string ImportContext::freshName(llvm::StringRef Base) {
  std::string B = Base.empty() ? "tmp" : Base.str();
  std::string Cand = B;
  while (OnnxNames.count(Cand) || G.lookup(Cand))
    Cand = B + "." + std::to_string(++Counter);
  // Reserved at once: callers may ask for several names before using any.
  OnnxNames.insert(Cand);
  return Cand;
}

Value *ImportContext::addConstant(llvm::StringRef Base, Tensor T) {
  return G.addConstant(freshName(Base), std::move(T));
}

Value *ImportContext::constInt64s(llvm::StringRef Base,
                                  llvm::ArrayRef<int64_t> Values) {
  return addConstant(Base, Tensor::fromInt64s(Values));
}

Value *ImportContext::constScalar(llvm::StringRef Base, DType Elem, double V) {
  return addConstant(Base, Tensor::scalar(Elem, V));
}

/// "2", "1 to 3", "1 or more".
static std::string countRange(unsigned Min, unsigned Max) {
  if (Max == VariadicCount)
    return std::to_string(Min) + " or more";
  if (Min == Max)
    return std::to_string(Min);
  return std::to_string(Min) + " to " + std::to_string(Max);
}

llvm::Expected<Node *> ImportContext::emit(OpKind Kind,
                                           llvm::ArrayRef<Value *> Operands,
                                           llvm::ArrayRef<std::string> Results,
                                           llvm::StringRef NodeName,
                                           AttrMap Attrs) {
  const OpInfo &Info = getOpInfo(Kind);
  // Trailing absent optional operands are simply left off.
  while (!Operands.empty() && !Operands.back())
    Operands = Operands.drop_back();
  std::string What = Info.Name.str() + " node";
  if (!NodeName.empty())
    What += " '" + NodeName.str() + "'";
  else if (!Results.empty() && !Results[0].empty())
    What += " producing '" + Results[0] + "'";
  if (Operands.size() < Info.MinOperands ||
      (Info.MaxOperands != VariadicCount && Operands.size() > Info.MaxOperands))
    return makeError(What + " has " + llvm::Twine(Operands.size()) +
                     " inputs; " + Info.Name + " takes " +
                     countRange(Info.MinOperands, Info.MaxOperands));
  for (unsigned I = 0; I < Info.MinOperands; ++I)
    if (!Operands[I])
      return makeError(What + ": required input " + llvm::Twine(I) +
                       " is missing");
  if (Results.size() < Info.MinResults ||
      (Info.MaxResults != VariadicCount && Results.size() > Info.MaxResults))
    return makeError(What + " has " + llvm::Twine(Results.size()) +
                     " outputs; " + Info.Name + " produces " +
                     countRange(Info.MinResults, Info.MaxResults));
  std::vector<std::string> Names;
  for (const std::string &R : Results)
    Names.push_back(R.empty() ? freshName(NodeName.empty()
                                              ? "unused"
                                              : NodeName.str() + ".unused")
                              : R);
  Node *N = G.addNode(Kind, Operands, Names, NodeName);
  for (const auto &E : Attrs)
    N->attrs().set(E.first, E.second);
  if (llvm::Error E = inferNodeTypes(*N))
    return E;
  return N;
}

} // namespace onnximport
} // namespace solder
