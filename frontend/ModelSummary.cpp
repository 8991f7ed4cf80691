//===- ModelSummary.cpp - What an ONNX model contains ---------------------===//
//
// Works on the raw protobuf so that models solder cannot import are still
// described in full (every unsupported op, not just the first one).
//
//===----------------------------------------------------------------------===//
#include "frontend/ModelSummary.h"
#include "frontend/LoweredOps.h"
#include "frontend/OnnxWire.h"
#include "frontend/TensorProto.h"
#include "ir/FileBytes.h"
#include "ir/OpKind.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <climits>
#include <google/protobuf/io/coded_stream.h>
#include <onnx/onnx_pb.h>
#include <set>

using namespace llvm;

namespace solder {

int64_t ModelSummary::defaultOpset() const {
  for (const auto &[Domain, Version] : Opsets)
    if (Domain == "ai.onnx")
      return Version;
  return 0;
}

static bool isDefaultDomain(StringRef Domain) {
  return Domain.empty() || Domain == "ai.onnx";
}

bool isFrontendSupportedOp(StringRef Domain, StringRef OpType) {
  if (!isDefaultDomain(Domain))
    return false;
  // Constant nodes are folded into constants by the importer, lowered ops
  // rewritten into other IR ops; every other supported op has an IR op of
  // the same name (ir/Ops.def).
  return OpType == "Constant" || lookupOp(OpType).has_value() ||
         onnximport::isLoweredOp(OpType);
}

bool isSupportedOnnxDType(int32_t T) {
  switch (T) {
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::BOOL:
    return true;
  default:
    return false;
  }
}

std::string onnxDTypeName(int32_t T) {
  switch (T) {
  case onnx::TensorProto::FLOAT:
    return "f32";
  case onnx::TensorProto::FLOAT16:
    return "f16";
  case onnx::TensorProto::BFLOAT16:
    return "bf16";
  case onnx::TensorProto::DOUBLE:
    return "f64";
  case onnx::TensorProto::INT8:
    return "i8";
  case onnx::TensorProto::UINT8:
    return "u8";
  case onnx::TensorProto::INT16:
    return "i16";
  case onnx::TensorProto::UINT16:
    return "u16";
  case onnx::TensorProto::INT32:
    return "i32";
  case onnx::TensorProto::UINT32:
    return "u32";
  case onnx::TensorProto::INT64:
    return "i64";
  case onnx::TensorProto::UINT64:
    return "u64";
  case onnx::TensorProto::BOOL:
    return "bool";
  case onnx::TensorProto::STRING:
    return "string";
  case onnx::TensorProto::COMPLEX64:
    return "c64";
  case onnx::TensorProto::COMPLEX128:
    return "c128";
  case onnx::TensorProto::UNDEFINED:
    return "undefined";
  default:
    if (onnx::TensorProto_DataType_IsValid(T))
      return StringRef(onnx::TensorProto_DataType_Name(T)).lower();
    return formatv("dtype#{0}", T).str();
  }
}

static unsigned onnxDTypeBytes(int32_t T) {
  switch (T) {
  case onnx::TensorProto::DOUBLE:
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::UINT64:
  case onnx::TensorProto::COMPLEX64:
    return 8;
  case onnx::TensorProto::COMPLEX128:
    return 16;
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::UINT32:
    return 4;
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::UINT16:
    return 2;
  default:
    return 1;
  }
}

static std::string typeText(const onnx::TypeProto &T) {
  switch (T.value_case()) {
  case onnx::TypeProto::kTensorType: {
    const auto &TT = T.tensor_type();
    std::string S = onnxDTypeName(TT.elem_type());
    if (!TT.has_shape())
      return S + "[*]"; // unknown rank
    S += "[";
    for (int I = 0; I < TT.shape().dim_size(); ++I) {
      const auto &D = TT.shape().dim(I);
      if (I)
        S += ",";
      if (D.has_dim_value())
        S += std::to_string(D.dim_value());
      else if (D.has_dim_param() && !D.dim_param().empty())
        S += D.dim_param();
      else
        S += "?";
    }
    return S + "]";
  }
  case onnx::TypeProto::kSequenceType:
    return "sequence<" + typeText(T.sequence_type().elem_type()) + ">";
  case onnx::TypeProto::kOptionalType:
    return "optional<" + typeText(T.optional_type().elem_type()) + ">";
  case onnx::TypeProto::kMapType:
    return "map<" + onnxDTypeName(T.map_type().key_type()) + "," +
           typeText(T.map_type().value_type()) + ">";
  case onnx::TypeProto::kSparseTensorType:
    return "sparse<" + onnxDTypeName(T.sparse_tensor_type().elem_type()) + ">";
  default:
    return "<no type>";
  }
}

static ValueSummary valueSummary(const onnx::ValueInfoProto &V) {
  ValueSummary S;
  S.Name = V.name();
  S.TypeText = typeText(V.type());
  if (V.type().has_tensor_type() && V.type().tensor_type().has_shape()) {
    const auto &Shape = V.type().tensor_type().shape();
    S.Rank = Shape.dim_size();
    for (const auto &D : Shape.dim()) {
      S.StaticDims.push_back(D.has_dim_value() ? D.dim_value() : -1);
      S.DimSymbols.push_back(D.has_dim_param() ? D.dim_param() : "");
    }
  }
  return S;
}

/// Why a graph input/output type is unsupported, or "".
static std::string unsupportedTypeReason(const onnx::TypeProto &T) {
  if (T.value_case() != onnx::TypeProto::kTensorType)
    return "has type " + typeText(T) + " (only tensors are supported)";
  int32_t Elem = T.tensor_type().elem_type();
  if (!isSupportedOnnxDType(Elem))
    return "has dtype " + onnxDTypeName(Elem);
  return "";
}

static std::string describeNode(const onnx::NodeProto &N) {
  std::string S = N.op_type() + " node";
  if (!N.name().empty())
    S += " '" + N.name() + "'";
  else if (N.output_size() && !N.output(0).empty())
    S += " producing '" + N.output(0) + "'";
  return S;
}

namespace {
/// Walks a graph and its sub-graphs, accumulating into a ModelSummary.
class Summarizer {
public:
  Summarizer(ModelSummary &S, int64_t Opset) : S(S), Opset(Opset) {}

  /// CutRaw: the raw_data splitWeights cut out of G's initializers (the
  /// main graph's), if any.
  void
  visitGraph(const onnx::GraphProto &G,
             const std::vector<std::optional<StringRef>> *CutRaw = nullptr) {
    for (int I = 0; I < G.initializer_size(); ++I) {
      const onnx::TensorProto &T = G.initializer(I);
      ConstantNames.insert(T.name());
      noteExternal(T);
      if (T.data_type() == onnx::TensorProto::BOOL)
        noteBoolConstant(T, CutRaw ? (*CutRaw)[I] : std::nullopt);
    }
    for (const onnx::NodeProto &N : G.node())
      visitNode(N);
  }

  StringMap<unsigned> Histogram;
  std::set<std::string> Unsupported, ExternalLocations;

private:
  void noteExternal(const onnx::TensorProto &T) {
    if (T.data_location() != onnx::TensorProto::EXTERNAL)
      return;
    for (const onnx::StringStringEntryProto &KV : T.external_data())
      if (KV.key() == "location")
        ExternalLocations.insert(KV.value());
  }

  void noteBoolConstant(const onnx::TensorProto &T,
                        std::optional<StringRef> CutRaw = std::nullopt) {
    // A training_mode operand that is a constant false is inference.
    bool AnyTrue = false;
    for (char C : CutRaw ? *CutRaw : StringRef(T.raw_data()))
      AnyTrue |= C != 0;
    for (int32_t V : T.int32_data())
      AnyTrue |= V != 0;
    if (!AnyTrue)
      FalseConstants.insert(T.name());
  }

  void visitNode(const onnx::NodeProto &N) {
    ++S.NumNodes;
    std::string Key = isDefaultDomain(N.domain())
                          ? N.op_type()
                          : N.domain() + "::" + N.op_type();
    ++Histogram[Key];
    if (!isFrontendSupportedOp(N.domain(), N.op_type()))
      Unsupported.insert(Key);
    if (N.op_type() == "Constant" && isDefaultDomain(N.domain())) {
      for (const onnx::AttributeProto &A : N.attribute()) {
        if (A.name() == "value" && A.has_t()) {
          if (!isSupportedOnnxDType(A.t().data_type()))
            S.UnsupportedTypes.push_back(describeNode(N) + " has dtype " +
                                         onnxDTypeName(A.t().data_type()));
          else if (A.t().data_type() == onnx::TensorProto::BOOL &&
                   N.output_size()) {
            onnx::TensorProto Named = A.t();
            Named.set_name(N.output(0));
            noteBoolConstant(Named);
          }
        } else if (A.name() == "sparse_value" || A.name() == "value_strings" ||
                   A.name() == "value_string") {
          S.UnsupportedTypes.push_back(describeNode(N) + " has a " + A.name() +
                                       " attribute");
        }
      }
      for (const std::string &O : N.output())
        ConstantNames.insert(O);
    }
    checkLegacy(N);
    for (const onnx::AttributeProto &A : N.attribute()) {
      if (A.has_t())
        noteExternal(A.t());
      for (const onnx::TensorProto &T : A.tensors())
        noteExternal(T);
      if (A.has_g())
        visitGraph(A.g());
      for (const onnx::GraphProto &G : A.graphs())
        visitGraph(G);
    }
  }

  void checkLegacy(const onnx::NodeProto &N) {
    if (!isDefaultDomain(N.domain()))
      return;
    for (const onnx::AttributeProto &A : N.attribute())
      if (A.name() == "broadcast" && A.i() != 0 && Opset < 7)
        S.LegacyFeatures.push_back(
            describeNode(N) + ": legacy `broadcast` attribute (opset " +
            std::to_string(Opset) + " < 7 broadcasting rules)");
    if (N.op_type() != "Dropout")
      return;
    if (Opset < 7) {
      // Before opset 7 Dropout was in training mode unless is_test = 1.
      bool IsTest = false;
      for (const onnx::AttributeProto &A : N.attribute())
        if (A.name() == "is_test")
          IsTest = A.i() != 0;
      if (!IsTest)
        S.LegacyFeatures.push_back(describeNode(N) +
                                   ": training-mode Dropout (is_test = 0)");
      return;
    }
    if (N.input_size() >= 3 && !N.input(2).empty() &&
        !FalseConstants.count(N.input(2)))
      S.LegacyFeatures.push_back(describeNode(N) +
                                 ": training-mode Dropout (training_mode "
                                 "operand '" +
                                 N.input(2) + "' is not a constant false)");
  }

  ModelSummary &S;
  int64_t Opset;
  std::set<std::string> ConstantNames, FalseConstants;
};
} // namespace

static void addHistogram(ModelSummary &S, const StringMap<unsigned> &H) {
  for (const auto &E : H)
    S.OpHistogram.emplace_back(E.getKey().str(), E.getValue());
  std::sort(S.OpHistogram.begin(), S.OpHistogram.end(),
            [](const auto &A, const auto &B) {
              return A.second != B.second ? A.second > B.second
                                          : A.first < B.first;
            });
}

Expected<ModelSummary> summarizeOnnxBytes(StringRef Bytes, StringRef Name) {
  if (Bytes.empty())
    return createStringError(inconvertibleErrorCode(),
                             "'" + Name + "': empty file, not an ONNX model");
  auto NotAModel = [&] {
    return createStringError(inconvertibleErrorCode(),
                             "'" + Name +
                                 "': not a valid ONNX model (protobuf parse "
                                 "failed)");
  };
  // The weights are cut out first: a summary never needs their bytes.
  Expected<onnximport::SplitModel> Split = onnximport::splitWeights(Bytes);
  if (!Split) {
    consumeError(Split.takeError());
    return NotAModel();
  }
  onnx::ModelProto M;
  const std::string &Skeleton = Split->Skeleton;
  google::protobuf::io::CodedInputStream In(
      reinterpret_cast<const uint8_t *>(Skeleton.data()),
      int(std::min<size_t>(Skeleton.size(), INT_MAX)));
  In.SetTotalBytesLimit(INT_MAX);
  if (Bytes.size() > size_t(INT_MAX) || !M.ParseFromCodedStream(&In) ||
      !In.ConsumedEntireMessage() ||
      Split->RawData.size() != size_t(M.graph().initializer_size()))
    return NotAModel();
  if (!M.has_graph())
    return createStringError(inconvertibleErrorCode(),
                             "'" + Name + "': the model has no graph");

  ModelSummary S;
  S.IrVersion = M.ir_version();
  S.ProducerName = M.producer_name();
  S.ProducerVersion = M.producer_version();
  const onnx::GraphProto &G = M.graph();
  S.GraphName = G.name();
  for (const onnx::OperatorSetIdProto &O : M.opset_import())
    S.Opsets.emplace_back(isDefaultDomain(O.domain()) ? "ai.onnx" : O.domain(),
                          O.version());
  int64_t Opset = S.defaultOpset();

  std::set<std::string> InitNames;
  for (int I = 0; I < G.initializer_size(); ++I) {
    const onnx::TensorProto &T = G.initializer(I);
    InitNames.insert(T.name());
    ++S.NumInitializers;
    uint64_t Count = 1;
    for (int64_t D : T.dims())
      Count *= uint64_t(std::max<int64_t>(D, 0));
    S.InitializerBytes += Split->RawData[I]
                              ? Split->RawData[I]->size()
                              : Count * onnxDTypeBytes(T.data_type());
    if (!isSupportedOnnxDType(T.data_type()))
      S.UnsupportedTypes.push_back("initializer '" + T.name() + "' has dtype " +
                                   onnxDTypeName(T.data_type()));
  }
  if (G.sparse_initializer_size())
    S.UnsupportedTypes.push_back("the graph has sparse initializers");
  for (const onnx::ValueInfoProto &V : G.input()) {
    if (InitNames.count(V.name()))
      continue;
    S.Inputs.push_back(valueSummary(V));
    std::string Why = unsupportedTypeReason(V.type());
    if (!Why.empty())
      S.UnsupportedTypes.push_back("input '" + V.name() + "' " + Why);
  }
  for (const onnx::ValueInfoProto &V : G.output()) {
    S.Outputs.push_back(valueSummary(V));
    std::string Why = unsupportedTypeReason(V.type());
    if (!Why.empty())
      S.UnsupportedTypes.push_back("output '" + V.name() + "' " + Why);
  }

  Summarizer Walk(S, Opset);
  Walk.visitGraph(G, &Split->RawData);
  addHistogram(S, Walk.Histogram);
  S.UnsupportedOps.assign(Walk.Unsupported.begin(), Walk.Unsupported.end());
  S.ExternalDataLocations.assign(Walk.ExternalLocations.begin(),
                                 Walk.ExternalLocations.end());
  return S;
}

Expected<std::string>
bindInputsAsConstants(StringRef ModelBytes, StringRef Name,
                      ArrayRef<std::pair<std::string, Tensor>> Bindings) {
  onnx::ModelProto M;
  if (Error E = onnximport::parseProtoBytes(ModelBytes, M, "ONNX model"))
    return E;
  onnx::GraphProto &G = *M.mutable_graph();
  for (const auto &Binding : Bindings) {
    // Not a structured binding: C++17 lambdas cannot capture those (clang
    // refuses).
    const std::string &InputName = Binding.first;
    const Tensor &T = Binding.second;
    auto &Inputs = *G.mutable_input();
    auto It = std::find_if(
        Inputs.begin(), Inputs.end(),
        [&](const onnx::ValueInfoProto &V) { return V.name() == InputName; });
    if (It == Inputs.end())
      return createStringError(inconvertibleErrorCode(),
                               "'" + Name + "' has no graph input '" +
                                   InputName + "' to bind");
    Inputs.erase(It);
    for (const onnx::TensorProto &Init : G.initializer())
      if (Init.name() == InputName)
        return createStringError(inconvertibleErrorCode(),
                                 "'" + Name + "': input '" + InputName +
                                     "' already has an initializer");
    onnximport::tensorToProto(T, InputName, *G.add_initializer());
  }
  std::string Out;
  if (!M.SerializeToString(&Out))
    return createStringError(inconvertibleErrorCode(),
                             "'" + Name + "': cannot serialize the model");
  return Out;
}

Expected<ModelSummary> summarizeOnnxFile(StringRef Path) {
  Expected<std::unique_ptr<MemoryBuffer>> Buf =
      readFileBytes(Path, "ONNX model");
  if (!Buf)
    return Buf.takeError();
  return summarizeOnnxBytes((*Buf)->getBuffer(), Path);
}

} // namespace solder
