//===- OnnxWire.cpp - Weights cut out of a serialized model ---------------===//
//
// The wire format: each field is a varint tag (number << 3 | wire type)
// followed by a varint, 8 or 4 fixed bytes, or a varint length and that
// many bytes. Only the path ModelProto.graph (7) -> GraphProto.initializer
// (5) -> TensorProto.raw_data (9) is rewritten; every other field is copied
// verbatim. A field repeated in the input keeps protobuf's meaning: a
// second graph merges (initializers append), the last raw_data wins.
//
//===----------------------------------------------------------------------===//
#include "frontend/OnnxWire.h"

using namespace llvm;

namespace solder {
namespace onnximport {
namespace {

enum WireType : unsigned {
  Varint = 0,
  Fixed64 = 1,
  LengthDelimited = 2,
  Fixed32 = 5,
};

constexpr uint32_t ModelGraph = 7;
constexpr uint32_t GraphInitializer = 5;
constexpr uint32_t TensorRawData = 9;

struct Field {
  uint32_t Number = 0;
  unsigned Type = 0;
  StringRef Whole;   ///< Tag and value, as encoded.
  StringRef Payload; ///< The bytes of a length-delimited field.
};

class WireReader {
public:
  explicit WireReader(StringRef In) : In(In) {}
  bool atEnd() const { return Pos == In.size(); }

  /// Reads the next field; false on malformed input.
  bool next(Field &F) {
    size_t Start = Pos;
    uint64_t Tag;
    if (!varint(Tag) || (Tag >> 3) == 0 || (Tag >> 3) > 0x1fffffff)
      return false;
    F.Number = uint32_t(Tag >> 3);
    F.Type = unsigned(Tag & 7);
    F.Payload = StringRef();
    switch (F.Type) {
    case Varint: {
      uint64_t Ignored;
      if (!varint(Ignored))
        return false;
      break;
    }
    case Fixed64:
      if (!skip(8))
        return false;
      break;
    case Fixed32:
      if (!skip(4))
        return false;
      break;
    case LengthDelimited: {
      uint64_t Len;
      if (!varint(Len) || Len > In.size() - Pos)
        return false;
      F.Payload = In.substr(Pos, Len);
      Pos += Len;
      break;
    }
    default: // groups (deprecated, unused by ONNX) and invalid types
      return false;
    }
    F.Whole = In.slice(Start, Pos);
    return true;
  }

private:
  bool varint(uint64_t &V) {
    V = 0;
    for (unsigned Shift = 0; Shift < 64; Shift += 7) {
      if (Pos == In.size())
        return false;
      uint8_t B = uint8_t(In[Pos++]);
      V |= uint64_t(B & 0x7f) << Shift;
      if (!(B & 0x80))
        return true;
    }
    return false;
  }
  bool skip(size_t N) {
    if (N > In.size() - Pos)
      return false;
    Pos += N;
    return true;
  }

  StringRef In;
  size_t Pos = 0;
};

void appendVarint(std::string &Out, uint64_t V) {
  while (V >= 0x80) {
    Out.push_back(char(uint8_t(V) | 0x80));
    V >>= 7;
  }
  Out.push_back(char(V));
}

void appendMessage(std::string &Out, uint32_t Number, StringRef Body) {
  appendVarint(Out, uint64_t(Number) << 3 | LengthDelimited);
  appendVarint(Out, Body.size());
  Out.append(Body.data(), Body.size());
}

Error malformed() {
  return createStringError(inconvertibleErrorCode(),
                           "not a valid ONNX model (truncated or corrupt "
                           "protobuf)");
}

Error splitTensor(StringRef In, std::string &Out,
                  std::optional<StringRef> &Raw) {
  WireReader R(In);
  Field F;
  while (!R.atEnd()) {
    if (!R.next(F))
      return malformed();
    if (F.Number == TensorRawData && F.Type == LengthDelimited)
      Raw = F.Payload;
    else
      Out.append(F.Whole.data(), F.Whole.size());
  }
  return Error::success();
}

Error splitGraph(StringRef In, std::string &Out, SplitModel &S) {
  WireReader R(In);
  Field F;
  while (!R.atEnd()) {
    if (!R.next(F))
      return malformed();
    if (F.Number != GraphInitializer || F.Type != LengthDelimited) {
      Out.append(F.Whole.data(), F.Whole.size());
      continue;
    }
    std::string Tensor;
    std::optional<StringRef> Raw;
    if (Error E = splitTensor(F.Payload, Tensor, Raw))
      return E;
    if (Raw)
      S.RawBytes += Raw->size();
    S.RawData.push_back(Raw);
    appendMessage(Out, GraphInitializer, Tensor);
  }
  return Error::success();
}

} // namespace

Expected<SplitModel> splitWeights(StringRef ModelBytes) {
  SplitModel S;
  WireReader R(ModelBytes);
  Field F;
  while (!R.atEnd()) {
    if (!R.next(F))
      return malformed();
    if (F.Number != ModelGraph || F.Type != LengthDelimited) {
      S.Skeleton.append(F.Whole.data(), F.Whole.size());
      continue;
    }
    std::string Graph;
    if (Error E = splitGraph(F.Payload, Graph, S))
      return std::move(E);
    appendMessage(S.Skeleton, ModelGraph, Graph);
  }
  return std::move(S);
}

} // namespace onnximport
} // namespace solder
