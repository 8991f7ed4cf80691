//===- Attribute.cpp - Node attributes -------------------------------------===//
#include "ir/Attribute.h"
#include <algorithm>

namespace solder {

llvm::StringRef attrKindName(AttrKind K) {
  switch (K) {
  case AttrKind::Int:
    return "int";
  case AttrKind::Float:
    return "float";
  case AttrKind::String:
    return "string";
  case AttrKind::Ints:
    return "ints";
  case AttrKind::Floats:
    return "floats";
  case AttrKind::Strings:
    return "strings";
  case AttrKind::Tensor:
    return "tensor";
  }
  return "?";
}

bool Attribute::operator==(const Attribute &O) const {
  if (kind() != O.kind())
    return false;
  if (kind() == AttrKind::Tensor)
    return getTensor().bitwiseEqual(O.getTensor());
  return V == O.V;
}

void AttrMap::set(llvm::StringRef Name, Attribute A) {
  auto It = std::lower_bound(
      Entries.begin(), Entries.end(), Name,
      [](const Entry &E, llvm::StringRef N) { return E.first < N; });
  if (It != Entries.end() && It->first == Name)
    It->second = std::move(A);
  else
    Entries.insert(It, Entry(Name.str(), std::move(A)));
}

void AttrMap::erase(llvm::StringRef Name) {
  Entries.erase(std::remove_if(Entries.begin(), Entries.end(),
                               [&](const Entry &E) { return E.first == Name; }),
                Entries.end());
}

const Attribute *AttrMap::find(llvm::StringRef Name) const {
  auto It = std::lower_bound(
      Entries.begin(), Entries.end(), Name,
      [](const Entry &E, llvm::StringRef N) { return E.first < N; });
  if (It != Entries.end() && It->first == Name)
    return &It->second;
  return nullptr;
}

int64_t AttrMap::getInt(llvm::StringRef Name, int64_t Default) const {
  const Attribute *A = find(Name);
  return A && A->kind() == AttrKind::Int ? A->getInt() : Default;
}
float AttrMap::getFloat(llvm::StringRef Name, float Default) const {
  const Attribute *A = find(Name);
  return A && A->kind() == AttrKind::Float ? A->getFloat() : Default;
}
std::string AttrMap::getString(llvm::StringRef Name,
                               llvm::StringRef Default) const {
  const Attribute *A = find(Name);
  return A && A->kind() == AttrKind::String ? A->getString() : Default.str();
}
std::vector<int64_t> AttrMap::getInts(llvm::StringRef Name,
                                      std::vector<int64_t> Default) const {
  const Attribute *A = find(Name);
  if (!A || A->kind() != AttrKind::Ints || A->getInts().empty())
    return Default;
  return A->getInts();
}
std::vector<float> AttrMap::getFloats(llvm::StringRef Name,
                                      std::vector<float> Default) const {
  const Attribute *A = find(Name);
  return A && A->kind() == AttrKind::Floats ? A->getFloats() : Default;
}

} // namespace solder
