//===- OnnxImporter.cpp - ONNX ModelProto to solder IR
//---------------------===//
//
// Reads a ModelProto, checks it as a whole before building anything (every
// unsupported op is listed in one error; dangling value references, name
// clashes and cycles are reported by name), turns initializers into
// constants (moving their bytes, never copying), builds graph inputs from
// the model's value infos and the caller's shape options, converts the
// nodes in topological order through OpsetConversion, and finally runs
// shape inference over the whole graph. Value types in the model's
// value_info are not trusted: inference recomputes every type.
//
//===----------------------------------------------------------------------===//
#include "frontend/OnnxImporter.h"
#include "frontend/ImportContext.h"
#include "frontend/OnnxWire.h"
#include "frontend/OpsetConversion.h"
#include "frontend/TensorProto.h"
#include "ir/OpRegistry.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"
#include <functional>
#include <map>
#include <queue>

namespace solder {
namespace onnximport {
namespace {

/// "n1" or "#12" (the node's position) for nodes without a name.
std::string nodeLabel(const onnx::NodeProto &NP, int Index) {
  return NP.name().empty() ? "#" + std::to_string(Index) : NP.name();
}

/// The default-domain opset of the model. Models without any opset import
/// predate opset versioning (IR version < 3) and are opset 1.
llvm::Expected<int64_t> defaultOpset(const onnx::ModelProto &M) {
  if (M.opset_import_size() == 0)
    return 1;
  int64_t Opset = 0;
  for (const auto &OI : M.opset_import())
    if (isDefaultDomain(OI.domain()))
      Opset = OI.version();
  if (Opset > MaxSupportedOpset)
    return makeError("model uses ONNX opset " + llvm::Twine(Opset) +
                     "; solder supports opsets up to " +
                     llvm::Twine(MaxSupportedOpset));
  return Opset;
}

/// One error naming every unsupported op type and the nodes using it.
llvm::Error checkSupportedOps(const onnx::GraphProto &GP, int64_t Opset) {
  std::vector<std::pair<std::string, std::vector<std::string>>> Bad;
  for (int I = 0; I < GP.node_size(); ++I) {
    const onnx::NodeProto &NP = GP.node(I);
    std::string Label = Opset == 0 && isDefaultDomain(NP.domain())
                            ? NP.op_type() + " (model imports no ai.onnx "
                                             "opset)"
                            : unsupportedOpLabel(NP, Opset);
    if (Label.empty())
      continue;
    auto It = std::find_if(Bad.begin(), Bad.end(),
                           [&](const auto &P) { return P.first == Label; });
    if (It == Bad.end()) {
      Bad.push_back({Label, {}});
      It = std::prev(Bad.end());
    }
    It->second.push_back(nodeLabel(NP, I));
  }
  if (Bad.empty())
    return llvm::Error::success();
  std::string Msg = "unsupported ops: ";
  for (size_t I = 0; I < Bad.size(); ++I) {
    if (I)
      Msg += "; ";
    Msg += Bad[I].first + " (nodes: " + llvm::join(Bad[I].second, ", ") + ")";
  }
  return makeError(Msg);
}

/// Node indices in a topological order, keeping the model's order where it
/// already is one. Reports reads of values nothing produces, values
/// produced twice, and cycles.
llvm::Expected<std::vector<int>>
topologicalOrder(const onnx::GraphProto &GP,
                 const llvm::StringSet<> &Predefined) {
  int N = GP.node_size();
  llvm::StringMap<int> Producer;
  for (int I = 0; I < N; ++I) {
    const onnx::NodeProto &NP = GP.node(I);
    for (const std::string &Out : NP.output()) {
      if (Out.empty())
        continue;
      if (Predefined.count(Out))
        return makeError(describeOnnxNode(NP) + " redefines '" + Out +
                         "', which is a graph input or initializer");
      auto Ins = Producer.try_emplace(Out, I);
      if (!Ins.second)
        return makeError(describeOnnxNode(NP) + " redefines '" + Out +
                         "', already produced by " +
                         describeOnnxNode(GP.node(Ins.first->second)));
    }
  }
  std::vector<int> Pending(N, 0);
  std::vector<std::vector<int>> Consumers(N);
  for (int I = 0; I < N; ++I) {
    const onnx::NodeProto &NP = GP.node(I);
    for (const std::string &In : NP.input()) {
      if (In.empty() || Predefined.count(In))
        continue;
      auto It = Producer.find(In);
      if (It == Producer.end())
        return makeError(describeOnnxNode(NP) + " reads '" + In +
                         "', which no node, graph input or initializer "
                         "produces");
      ++Pending[I];
      Consumers[It->second].push_back(I);
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> Ready;
  for (int I = 0; I < N; ++I)
    if (Pending[I] == 0)
      Ready.push(I);
  std::vector<int> Order;
  while (!Ready.empty()) {
    int I = Ready.top();
    Ready.pop();
    Order.push_back(I);
    for (int U : Consumers[I])
      if (--Pending[U] == 0)
        Ready.push(U);
  }
  if (int(Order.size()) == N)
    return Order;
  // Walk back through unfinished producers from any unfinished node until a
  // node repeats: that node lies on a cycle.
  int Cur = 0;
  while (Pending[Cur] == 0)
    ++Cur;
  std::vector<bool> Seen(N, false);
  while (!Seen[Cur]) {
    Seen[Cur] = true;
    int Next = -1;
    for (const std::string &In : GP.node(Cur).input()) {
      auto It = Producer.find(In);
      if (!In.empty() && !Predefined.count(In) && It != Producer.end() &&
          Pending[It->second] > 0) {
        Next = It->second;
        break;
      }
    }
    assert(Next >= 0 && "an unfinished node has an unfinished producer");
    Cur = Next;
  }
  return makeError("the graph has a cycle through " +
                   describeOnnxNode(GP.node(Cur)));
}

std::string formatDims(llvm::ArrayRef<int64_t> Dims) {
  std::string S;
  for (size_t I = 0; I < Dims.size(); ++I)
    S += (I ? "x" : "") + std::to_string(Dims[I]);
  return S.empty() ? "(scalar)" : S;
}

/// Builds the graph inputs (those that are not initializers) from their
/// value infos, then applies the caller's shapes and symbol sizes.
llvm::Error addInputs(Graph &G, const onnx::GraphProto &GP,
                      const llvm::StringSet<> &InitNames,
                      const ImportOptions &Opts) {
  // Every dim_param, so generated symbol names avoid them.
  llvm::StringSet<> Symbols;
  for (const auto &VI : GP.input())
    for (const auto &D : VI.type().tensor_type().shape().dim())
      if (D.has_dim_param() && !D.dim_param().empty())
        Symbols.insert(D.dim_param());

  struct PendingInput {
    std::string Name;
    TensorType Type;
  };
  std::vector<PendingInput> Inputs;
  llvm::StringSet<> Seen;
  for (const auto &VI : GP.input()) {
    const std::string &Name = VI.name();
    if (InitNames.count(Name))
      continue; // an initializer listed as input (IR < 4): a constant
    if (Name.empty())
      return makeError("a graph input has an empty name");
    if (!Seen.insert(Name).second)
      return makeError("graph input '" + Name + "' is listed twice");
    if (!VI.type().has_tensor_type())
      return makeError("graph input '" + Name +
                       "' is not a tensor (sequences, maps and optionals "
                       "are not supported)");
    const auto &TT = VI.type().tensor_type();
    std::optional<DType> Elem = dtypeFromOnnx(TT.elem_type());
    if (!Elem)
      return makeError("graph input '" + Name + "' has element type " +
                       onnxTypeName(TT.elem_type()) +
                       ", which solder does not support");
    auto Given = Opts.InputShapes.find(Name);
    if (!TT.has_shape() && Given == Opts.InputShapes.end())
      return makeError("graph input '" + Name +
                       "' has no shape in the model (unknown rank); give "
                       "one explicitly (e.g. --shape " +
                       Name + "=1x3x224x224)");
    Shape Dims;
    if (TT.has_shape()) {
      for (int I = 0; I < TT.shape().dim_size(); ++I) {
        const auto &D = TT.shape().dim(I);
        if (D.has_dim_value()) {
          int64_t V = D.dim_value();
          if (V < 0 || V > MaxDimSize)
            return makeError("graph input '" + Name + "' has dim " +
                             llvm::Twine(I) + " = " + llvm::Twine(V) +
                             ", outside [0, " + llvm::Twine(MaxDimSize) + "]");
          Dims.push_back(Dim(V));
        } else if (D.has_dim_param() && !D.dim_param().empty()) {
          Dims.push_back(Dim::symbol(D.dim_param()));
        } else {
          // An anonymous dynamic dim gets its own symbol so that it can
          // still be bound by name ("<input>_d<i>").
          std::string Sym = Name + "_d" + std::to_string(I);
          while (Symbols.count(Sym))
            Sym += "_";
          Symbols.insert(Sym);
          Dims.push_back(Dim::symbol(Sym));
        }
      }
    }
    if (Given != Opts.InputShapes.end()) {
      const std::vector<int64_t> &S = Given->second;
      if (llvm::Error E =
              checkDims(S, "the shape given for input '" + Name + "'"))
        return E;
      if (TT.has_shape() && S.size() != Dims.size())
        return makeError("graph input '" + Name + "' has rank " +
                         llvm::Twine(Dims.size()) + " (" +
                         typeToString(TensorType(*Elem, Dims)) +
                         ") but the shape given for it, " + formatDims(S) +
                         ", has rank " + llvm::Twine(S.size()));
      if (!TT.has_shape())
        Dims.assign(S.size(), Dim());
      for (size_t I = 0; I < S.size(); ++I) {
        if (Dims[I].isStatic() && Dims[I].size() != S[I])
          return makeError(
              "graph input '" + Name + "' has dim " + llvm::Twine(I) + " = " +
              llvm::Twine(Dims[I].size()) +
              " but the shape given for it says " + llvm::Twine(S[I]));
      }
    }
    // Each declared dim is in range; so must their product be.
    std::vector<int64_t> StaticDims;
    for (const Dim &D : Dims)
      if (D.isStatic())
        StaticDims.push_back(D.size());
    if (llvm::Error E = checkDims(StaticDims, "graph input '" + Name + "'"))
      return E;
    // Symbols are bound (here and in other inputs) below, after checking
    // that the given shapes agree on them.
    Inputs.push_back({Name, TensorType(*Elem, Dims)});
  }
  for (const auto &KV : Opts.InputShapes)
    if (!Seen.count(KV.first()))
      return makeError(
          "a shape is given for '" + KV.first() +
          "', which is not a graph input" +
          (InitNames.count(KV.first()) ? " (it is an initializer)" : ""));

  // Symbol sizes: from the given input shapes, then the explicit ones.
  llvm::StringMap<int64_t> Bind;
  for (const PendingInput &In : Inputs) {
    auto Given = Opts.InputShapes.find(In.Name);
    if (Given == Opts.InputShapes.end())
      continue;
    for (size_t I = 0; I < In.Type.Dims.size(); ++I) {
      const Dim &D = In.Type.Dims[I];
      if (!D.isSymbol())
        continue;
      auto Ins = Bind.try_emplace(D.symbol(), Given->second[I]);
      if (!Ins.second && Ins.first->second != Given->second[I])
        return makeError("symbol '" + D.symbol() + "' is given as both " +
                         llvm::Twine(Ins.first->second) + " and " +
                         llvm::Twine(Given->second[I]) +
                         " by the input shapes");
    }
  }
  for (const auto &KV : Opts.SymbolSizes) {
    if (!Symbols.count(KV.first()))
      return makeError("a size is given for symbol '" + KV.first() +
                       "', which no graph input dim uses");
    if (KV.second < 0 || KV.second > MaxDimSize)
      return makeError("the size given for symbol '" + KV.first() + "' (" +
                       llvm::Twine(KV.second) + ") is outside [0, " +
                       llvm::Twine(MaxDimSize) + "]");
    auto Ins = Bind.try_emplace(KV.first(), KV.second);
    if (!Ins.second && Ins.first->second != KV.second)
      return makeError(
          "symbol '" + KV.first() + "' is given as " + llvm::Twine(KV.second) +
          " but an input shape makes it " + llvm::Twine(Ins.first->second));
  }
  for (PendingInput &In : Inputs) {
    auto Given = Opts.InputShapes.find(In.Name);
    if (Given != Opts.InputShapes.end())
      for (size_t I = 0; I < Given->second.size(); ++I)
        In.Type.Dims[I] = Dim(Given->second[I]);
    for (Dim &D : In.Type.Dims)
      if (D.isSymbol()) {
        auto It = Bind.find(D.symbol());
        if (It != Bind.end())
          D = Dim(It->second);
      }
    G.addInput(In.Name, In.Type);
  }
  return llvm::Error::success();
}

/// Raw is the initializers' raw_data cut out of M's bytes (splitWeights),
/// Owner what keeps them alive (null: they are copied).
llvm::Expected<std::unique_ptr<Graph>>
importModel(onnx::ModelProto &M, llvm::StringRef BaseDir,
            const ImportOptions &Opts, const SplitModel &Raw,
            std::shared_ptr<const void> Owner) {
  if (!M.has_graph())
    return makeError("not an ONNX model: no graph (empty or corrupt file?)");
  onnx::GraphProto &GP = *M.mutable_graph();
  auto OpsetOr = defaultOpset(M);
  if (!OpsetOr)
    return OpsetOr.takeError();
  int64_t Opset = *OpsetOr;
  if (llvm::Error E = checkSupportedOps(GP, Opset))
    return E;
  if (GP.sparse_initializer_size())
    return makeError("sparse initializer '" +
                     GP.sparse_initializer(0).values().name() +
                     "' is not supported");
  if (GP.output_size() == 0)
    return makeError("the model's graph has no outputs");

  auto G = std::make_unique<Graph>(GP.name().empty() ? "main" : GP.name());
  G->setOpsetVersion(Opset);
  ImportContext C(*G, BaseDir.str());
  for (const auto &T : GP.initializer())
    C.OnnxNames.insert(T.name());
  for (const auto &VI : GP.input())
    C.OnnxNames.insert(VI.name());
  for (const auto &NP : GP.node()) {
    for (const std::string &In : NP.input()) {
      C.OnnxNames.insert(In);
      C.ReadNames.insert(In);
    }
    for (const std::string &Out : NP.output())
      C.OnnxNames.insert(Out);
  }
  for (const auto &VI : GP.output()) {
    C.OnnxNames.insert(VI.name());
    C.ReadNames.insert(VI.name());
  }

  // Initializers become constants viewing (or holding a copy of) the bytes
  // of the model.
  llvm::StringSet<> InitNames;
  if (Raw.RawData.size() != size_t(GP.initializer_size()))
    return makeError("not a valid ONNX model (initializers do not parse)");
  for (int I = 0; I < GP.initializer_size(); ++I) {
    onnx::TensorProto &TP = *GP.mutable_initializer(I);
    if (TP.name().empty())
      return makeError("an initializer has an empty name");
    if (!InitNames.insert(TP.name()).second)
      return makeError("initializer '" + TP.name() + "' is defined twice");
    auto T = tensorFromProto(TP, BaseDir, "initializer '" + TP.name() + "'",
                             Raw.RawData[I], Owner);
    if (!T)
      return T.takeError();
    G->addConstant(TP.name(), std::move(*T));
    // Typed-field data was copied; free it now rather than at the end.
    std::string Name = TP.name();
    TP.Clear();
    TP.set_name(Name);
  }
  if (llvm::Error E = addInputs(*G, GP, InitNames, Opts))
    return E;

  llvm::StringSet<> Predefined = InitNames;
  for (const auto &VI : GP.input())
    Predefined.insert(VI.name());
  auto Order = topologicalOrder(GP, Predefined);
  if (!Order)
    return Order.takeError();
  for (int I : *Order)
    if (llvm::Error E = convertNode(C, *GP.mutable_node(I), Opset))
      return E;

  for (const auto &VI : GP.output()) {
    Value *V = VI.name().empty() ? nullptr : G->lookup(VI.name());
    if (!V)
      return makeError("graph output '" + VI.name() + "' is not produced");
    G->addOutput(V);
  }
  if (llvm::Error E = inferGraphTypes(*G))
    return E;
  return G;
}

} // namespace
} // namespace onnximport

/// Where names the bytes in parse errors ("'model.onnx'", "input");
/// ErrorPrefix, when not empty, starts every other error ("model.onnx").
static llvm::Expected<std::unique_ptr<Graph>>
importSerialized(llvm::StringRef Bytes, std::shared_ptr<const void> Owner,
                 llvm::StringRef Where, llvm::StringRef ErrorPrefix,
                 llvm::StringRef BaseDir, const ImportOptions &Opts) {
  auto Split = onnximport::splitWeights(Bytes);
  if (!Split)
    return makeError(Where + ": " + llvm::toString(Split.takeError()));
  onnx::ModelProto M;
  if (llvm::Error E =
          onnximport::parseProtoBytes(Split->Skeleton, M, "ONNX model", Where))
    return E;
  Split->Skeleton.clear();
  auto G = onnximport::importModel(M, BaseDir, Opts, *Split, std::move(Owner));
  if (!G && !ErrorPrefix.empty())
    return makeError(ErrorPrefix + ": " + llvm::toString(G.takeError()));
  return G;
}

llvm::Expected<std::unique_ptr<Graph>>
importOnnxFile(llvm::StringRef Path, const ImportOptions &Opts) {
  auto Buf = onnximport::readProtoFile(Path, "ONNX model");
  if (!Buf)
    return Buf.takeError();
  // The mapped file stays alive as long as a constant views its bytes.
  std::shared_ptr<llvm::MemoryBuffer> File = std::move(*Buf);
  llvm::StringRef Bytes = File->getBuffer();
  return importOnnxShared(Bytes, std::move(File), Path, Opts);
}

llvm::Expected<std::unique_ptr<Graph>>
importOnnxShared(llvm::StringRef Bytes, std::shared_ptr<const void> Owner,
                 llvm::StringRef Path, const ImportOptions &Opts) {
  if (Path.empty())
    return importSerialized(Bytes, std::move(Owner), "input", "", "", Opts);
  llvm::SmallString<256> Dir(Path);
  llvm::sys::path::remove_filename(Dir);
  if (Dir.empty())
    Dir = ".";
  return importSerialized(Bytes, std::move(Owner), ("'" + Path + "'").str(),
                          Path, Dir, Opts);
}

llvm::Expected<std::unique_ptr<Graph>>
importOnnxBytes(llvm::StringRef Bytes, llvm::StringRef BaseDir,
                const ImportOptions &Opts) {
  // The caller's bytes may not outlive the graph: weights are copied.
  return importSerialized(Bytes, nullptr, "input", "", BaseDir, Opts);
}

} // namespace solder
