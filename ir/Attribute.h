//===- Attribute.h - Node attributes ----------------------------*- C++ -*-===//
//
// Attributes are the compile-time parameters of a node (ONNX's attributes,
// under their ONNX names). Which names and kinds an op accepts is declared
// once in the op registry; the verifier checks nodes against it.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_IR_ATTRIBUTE_H
#define SOLDER_IR_ATTRIBUTE_H

#include "ir/Tensor.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace solder {

enum class AttrKind : uint8_t { Int, Float, String, Ints, Floats, Strings, Tensor };

llvm::StringRef attrKindName(AttrKind K);

class Attribute {
public:
  using Storage =
      std::variant<int64_t, float, std::string, std::vector<int64_t>,
                   std::vector<float>, std::vector<std::string>, Tensor>;

  Attribute() : V(int64_t(0)) {}
  Attribute(int64_t I) : V(I) {}
  Attribute(int I) : V(int64_t(I)) {}
  Attribute(float F) : V(F) {}
  Attribute(std::string S) : V(std::move(S)) {}
  Attribute(const char *S) : V(std::string(S)) {}
  Attribute(std::vector<int64_t> Is) : V(std::move(Is)) {}
  Attribute(std::vector<float> Fs) : V(std::move(Fs)) {}
  Attribute(std::vector<std::string> Ss) : V(std::move(Ss)) {}
  Attribute(Tensor T) : V(std::move(T)) {}

  AttrKind kind() const { return AttrKind(V.index()); }
  int64_t getInt() const { return std::get<int64_t>(V); }
  float getFloat() const { return std::get<float>(V); }
  const std::string &getString() const { return std::get<std::string>(V); }
  const std::vector<int64_t> &getInts() const {
    return std::get<std::vector<int64_t>>(V);
  }
  const std::vector<float> &getFloats() const {
    return std::get<std::vector<float>>(V);
  }
  const std::vector<std::string> &getStrings() const {
    return std::get<std::vector<std::string>>(V);
  }
  const Tensor &getTensor() const { return std::get<Tensor>(V); }

  bool operator==(const Attribute &O) const;

private:
  Storage V;
};

/// Attributes of one node, kept sorted by name so printing is deterministic.
class AttrMap {
public:
  using Entry = std::pair<std::string, Attribute>;

  void set(llvm::StringRef Name, Attribute A);
  bool has(llvm::StringRef Name) const { return find(Name) != nullptr; }
  void erase(llvm::StringRef Name);
  const Attribute *find(llvm::StringRef Name) const;
  bool empty() const { return Entries.empty(); }
  size_t size() const { return Entries.size(); }

  /// Typed getters with the default the caller passes (usually ONNX's).
  /// An empty ints list counts as absent (as shape inference reads
  /// strides, dilations and pads), so every reader of one attribute sees
  /// the same values.
  int64_t getInt(llvm::StringRef Name, int64_t Default) const;
  float getFloat(llvm::StringRef Name, float Default) const;
  std::string getString(llvm::StringRef Name, llvm::StringRef Default) const;
  std::vector<int64_t> getInts(llvm::StringRef Name,
                               std::vector<int64_t> Default = {}) const;
  std::vector<float> getFloats(llvm::StringRef Name,
                               std::vector<float> Default = {}) const;

  std::vector<Entry>::const_iterator begin() const { return Entries.begin(); }
  std::vector<Entry>::const_iterator end() const { return Entries.end(); }
  bool operator==(const AttrMap &O) const { return Entries == O.Entries; }

private:
  std::vector<Entry> Entries;
};

} // namespace solder

#endif
