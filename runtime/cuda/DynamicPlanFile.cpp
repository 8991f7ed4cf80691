//===- DynamicPlanFile.cpp - A dynamic model as one file ------------------===//
#include "runtime/cuda/DynamicPlanFile.h"
#include "ir/FileBytes.h"
#include "runtime/cuda/PlanFile.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include <cstring>

using namespace llvm;

namespace solder {

static const char Magic[8] = {'S', 'O', 'L', 'D', 'E', 'R', 'D', 'P'};

static Error dynPlanError(const Twine &Msg) {
  return createStringError(inconvertibleErrorCode(), "dynamic plan: " + Msg);
}

static json::Array strings(const std::vector<std::string> &V) {
  json::Array A;
  for (const std::string &S : V)
    A.push_back(S);
  return A;
}

static json::Object header(const CompileOptions &O) {
  json::Object Ranges, Shapes, Symbols;
  for (const auto &E : O.InputRanges) {
    json::Array A;
    for (DimRange R : E.getValue())
      A.push_back(json::Array{R.Min, R.Max});
    Ranges[E.getKey()] = std::move(A);
  }
  for (const auto &E : O.InputShapes)
    Shapes[E.getKey()] = json::Array(E.getValue());
  for (const auto &E : O.SymbolSizes)
    Symbols[E.getKey()] = E.getValue();
  return json::Object{{"ranges", std::move(Ranges)},
                      {"input_shapes", std::move(Shapes)},
                      {"symbol_sizes", std::move(Symbols)},
                      {"arch", O.Arch},
                      {"precision", precisionName(O.Prec)},
                      {"compute_io", O.ComputeIo},
                      {"layout", convLayoutName(O.Layout)},
                      {"allow_tf32", O.AllowTF32},
                      {"no_fusion", O.NoFusion},
                      {"fuse_attention", O.FuseAttention},
                      {"defer_norms", O.DeferNorms},
                      {"auto_attention", O.AutoAttention},
                      {"gemm_kernels", gemmKernelsName(O.Gemm)},
                      {"attention_kernels", attentionKernelsName(O.Attention)},
                      {"conv_epilogues", convEpiloguesName(O.Conv)},
                      {"dependent_launch", O.DependentLaunch},
                      {"disabled_passes", strings(O.DisabledPasses)},
                      {"disabled_fusions", strings(O.DisabledFusions)},
                      {"max_constant_bytes", int64_t(O.MaxConstantBytes)},
                      {"max_tensor_bytes", int64_t(O.MaxTensorBytes)},
                      {"max_shape_variants", int64_t(O.MaxShapeVariants)}};
}

static void putU64(raw_ostream &OS, uint64_t V) {
  char B[8];
  for (int I = 0; I < 8; ++I)
    B[I] = char(V >> (8 * I));
  OS.write(B, 8);
}

static uint64_t getU64(StringRef B) {
  uint64_t V = 0;
  for (int I = 0; I < 8; ++I)
    V |= uint64_t(uint8_t(B[I])) << (8 * I);
  return V;
}

/// The file up to the model: magic, version, header size, header (JSON),
/// model size. The model and its checksum follow.
static std::string prefix(const DynamicPlan &P) {
  std::string Head = formatv("{0}", json::Value(header(P.Opts))).str();
  std::string Body;
  raw_string_ostream OS(Body);
  OS.write(Magic, sizeof(Magic));
  uint32_t V = DynamicPlanFormatVersion;
  char VB[4] = {char(V), char(V >> 8), char(V >> 16), char(V >> 24)};
  OS.write(VB, 4);
  putU64(OS, Head.size());
  OS << Head;
  putU64(OS, P.OnnxBytes.size());
  return OS.str();
}

/// The file after Prefix: the model through Write (up to gigabytes, in
/// batches), then the checksum of everything before it.
static void emit(const DynamicPlan &P, StringRef Prefix, raw_ostream &Out,
                 PartWriter Write) {
  PlanChecksum Sum;
  Sum.update(Prefix);
  Out << Prefix;
  std::vector<StringRef> Parts;
  appendParts(P.OnnxBytes, Parts);
  checksumAndWrite(Parts, Sum, Write);
  putU64(Out, Sum.finish());
}

std::string serializeDynamicPlan(const DynamicPlan &P) {
  std::string Prefix = prefix(P);
  return emitToString([&](raw_pwrite_stream &OS, PartWriter Write) {
    emit(P, Prefix, OS, Write);
  });
}

/// The header's fields back into options; an error names a bad one.
static Expected<CompileOptions> options(const json::Object &H) {
  CompileOptions O;
  auto Bad = [](StringRef Field) {
    return dynPlanError("bad header field '" + Field + "'");
  };
  const json::Object *Ranges = H.getObject("ranges");
  if (!Ranges || Ranges->empty())
    return Bad("ranges");
  for (const auto &E : *Ranges) {
    const json::Array *A = E.second.getAsArray();
    if (!A)
      return Bad("ranges");
    std::vector<DimRange> R;
    for (const json::Value &D : *A) {
      const json::Array *MM = D.getAsArray();
      if (!MM || MM->size() != 2 || !(*MM)[0].getAsInteger() ||
          !(*MM)[1].getAsInteger())
        return Bad("ranges");
      R.push_back({*(*MM)[0].getAsInteger(), *(*MM)[1].getAsInteger()});
    }
    O.InputRanges[E.first.str()] = std::move(R);
  }
  if (const json::Object *S = H.getObject("input_shapes"))
    for (const auto &E : *S) {
      const json::Array *A = E.second.getAsArray();
      if (!A)
        return Bad("input_shapes");
      std::vector<int64_t> D;
      for (const json::Value &X : *A) {
        if (!X.getAsInteger())
          return Bad("input_shapes");
        D.push_back(*X.getAsInteger());
      }
      O.InputShapes[E.first.str()] = std::move(D);
    }
  if (const json::Object *S = H.getObject("symbol_sizes"))
    for (const auto &E : *S) {
      if (!E.second.getAsInteger())
        return Bad("symbol_sizes");
      O.SymbolSizes[E.first.str()] = *E.second.getAsInteger();
    }
  auto Str = [&](StringRef K) { return H.getString(K).getValueOr(""); };
  O.Arch = Str("arch").str();
  std::optional<Precision> Prec = parsePrecision(Str("precision"));
  std::optional<ConvLayout> Layout = parseConvLayout(Str("layout"));
  if (!Prec)
    return Bad("precision");
  if (!Layout)
    return Bad("layout");
  O.Prec = *Prec;
  O.Layout = *Layout;
  O.ComputeIo = H.getBoolean("compute_io").getValueOr(false);
  O.AllowTF32 = H.getBoolean("allow_tf32").getValueOr(false);
  O.NoFusion = H.getBoolean("no_fusion").getValueOr(false);
  O.FuseAttention = H.getBoolean("fuse_attention").getValueOr(false);
  O.DeferNorms = H.getBoolean("defer_norms").getValueOr(false);
  O.AutoAttention = H.getBoolean("auto_attention").getValueOr(true);
  // Absent in files written before these were recorded: auto.
  std::optional<GemmKernels> Gemm = parseGemmKernels(
      H.getString("gemm_kernels").getValueOr(gemmKernelsName(O.Gemm)));
  std::optional<AttentionKernels> Attn =
      parseAttentionKernels(H.getString("attention_kernels")
                                .getValueOr(attentionKernelsName(O.Attention)));
  if (!Gemm)
    return Bad("gemm_kernels");
  if (!Attn)
    return Bad("attention_kernels");
  std::optional<ConvEpilogues> Conv = parseConvEpilogues(
      H.getString("conv_epilogues").getValueOr(convEpiloguesName(O.Conv)));
  if (!Conv)
    return Bad("conv_epilogues");
  O.Gemm = *Gemm;
  O.Attention = *Attn;
  O.Conv = *Conv;
  O.DependentLaunch = H.getBoolean("dependent_launch").getValueOr(false);
  for (auto [Key, Out] :
       {std::make_pair("disabled_passes", &O.DisabledPasses),
        std::make_pair("disabled_fusions", &O.DisabledFusions)})
    if (const json::Array *A = H.getArray(Key))
      for (const json::Value &X : *A) {
        if (!X.getAsString())
          return Bad(Key);
        Out->push_back(X.getAsString()->str());
      }
  if (auto C = H.getInteger("max_constant_bytes"); C && *C > 0)
    O.MaxConstantBytes = size_t(*C);
  if (auto T = H.getInteger("max_tensor_bytes"); T && *T > 0)
    O.MaxTensorBytes = uint64_t(*T);
  if (auto V = H.getInteger("max_shape_variants"); V && *V > 0)
    O.MaxShapeVariants = unsigned(*V);
  return O;
}

Expected<DynamicPlan> deserializeDynamicPlan(StringRef Bytes) {
  if (Bytes.size() < sizeof(Magic) + 4 + 8 ||
      std::memcmp(Bytes.data(), Magic, sizeof(Magic)) != 0)
    return dynPlanError("not a dynamic plan file (no SOLDERDP magic)");
  uint32_t Version =
      uint32_t(uint8_t(Bytes[8])) | uint32_t(uint8_t(Bytes[9])) << 8 |
      uint32_t(uint8_t(Bytes[10])) << 16 | uint32_t(uint8_t(Bytes[11])) << 24;
  if (Version != DynamicPlanFormatVersion)
    return dynPlanError(
        "format version " + Twine(Version) + ", this solder reads " +
        Twine(DynamicPlanFormatVersion) + ": compile the model again");
  if (Bytes.size() < 8 + 4 + 8 + 8 + 8)
    return dynPlanError("truncated");
  uint64_t Sum = getU64(Bytes.take_back(8));
  StringRef Covered = Bytes.drop_back(8);
  if (planChecksum(Covered) != Sum)
    return dynPlanError("checksum mismatch: the file is corrupt or truncated");
  uint64_t HeadSize = getU64(Covered.substr(12, 8));
  if (HeadSize > Covered.size() - 20 - 8)
    return dynPlanError("header size past the end");
  StringRef Head = Covered.substr(20, HeadSize);
  uint64_t ModelSize = getU64(Covered.substr(20 + HeadSize, 8));
  if (ModelSize != Covered.size() - 28 - HeadSize)
    return dynPlanError("model size does not match the file");
  Expected<json::Value> J = json::parse(Head);
  if (!J)
    return dynPlanError("bad header: " + toString(J.takeError()));
  const json::Object *H = J->getAsObject();
  if (!H)
    return dynPlanError("bad header: not an object");
  Expected<CompileOptions> O = options(*H);
  if (!O)
    return O.takeError();
  DynamicPlan P;
  P.Opts = std::move(*O);
  P.OnnxBytes = Covered.substr(28 + HeadSize).str();
  return std::move(P);
}

Error writeDynamicPlanFile(StringRef Path, const DynamicPlan &P) {
  std::string Prefix = prefix(P);
  return emitToFile(
      Path,
      [&](raw_pwrite_stream &OS, PartWriter Write) {
        emit(P, Prefix, OS, Write);
      },
      Prefix.size() + P.OnnxBytes.size() + 8);
}

Expected<DynamicPlan> readDynamicPlanFile(StringRef Path) {
  Expected<std::unique_ptr<MemoryBuffer>> Buf =
      readFileBytes(Path, "dynamic plan", /*MapAbove=*/0);
  if (!Buf)
    return Buf.takeError();
  Expected<DynamicPlan> P = deserializeDynamicPlan((*Buf)->getBuffer());
  if (!P)
    return createStringError(inconvertibleErrorCode(),
                             "'" + Path + "': " + toString(P.takeError()));
  return P;
}

bool looksLikeDynamicPlanFile(StringRef Path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buf =
      MemoryBuffer::getFileSlice(Path, sizeof(Magic), 0);
  return Buf && (*Buf)->getBufferSize() == sizeof(Magic) &&
         std::memcmp((*Buf)->getBufferStart(), Magic, sizeof(Magic)) == 0;
}

} // namespace solder
