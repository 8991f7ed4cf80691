//===- CommandUtils.cpp - Helpers shared by the solder commands -----------===//
#include "tools/CommandUtils.h"
#include "frontend/ModelSummary.h"
#include "passes/Pipeline.h"
#include "tools/GpuCommands.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>
#include <limits>

using namespace llvm;

namespace solder {

int reportError(Error E) {
  std::string Msg = toString(std::move(E));
  errs() << "error: " << Msg << "\n";
  return ExitBadInput;
}

int reportError(const Twine &Msg) {
  errs() << "error: " << Msg << "\n";
  return ExitBadInput;
}

static Error usageError(const Twine &Msg) {
  return createStringError(inconvertibleErrorCode(), Msg);
}

Expected<std::vector<int64_t>> parseDims(StringRef Text) {
  std::vector<int64_t> Dims;
  Text = Text.trim();
  if (Text.empty() || Text == "scalar")
    return Dims;
  SmallVector<StringRef, 6> Parts;
  Text.split(Parts, 'x');
  for (StringRef P : Parts) {
    uint64_t D;
    if (P.trim().getAsInteger(10, D) || int64_t(D) > MaxDimSize)
      return usageError("bad dims '" + Text +
                        "' (expected sizes joined by 'x', e.g. 1x128, each "
                        "at most " +
                        Twine(MaxDimSize) + ")");
    Dims.push_back(int64_t(D));
  }
  return Dims;
}

Expected<std::vector<DimRange>> parseDimRanges(StringRef Text) {
  std::vector<DimRange> Out;
  SmallVector<StringRef, 4> Parts;
  Text.split(Parts, 'x');
  for (StringRef P : Parts) {
    auto [Lo, Hi] = P.trim().split("..");
    if (!P.contains(".."))
      Hi = Lo;
    uint64_t A, B;
    if (Lo.getAsInteger(10, A) || Hi.getAsInteger(10, B) ||
        int64_t(B) > MaxDimSize || A > B)
      return usageError("bad dim ranges '" + Text +
                        "' (expected MIN..MAX or SIZE per dim, joined by "
                        "'x', e.g. 1..32x128; each at most " +
                        Twine(MaxDimSize) + ")");
    Out.push_back({int64_t(A), int64_t(B)});
  }
  return Out;
}

Expected<ImportOptions>
parseShapeArgs(ArrayRef<std::string> Args, const ModelSummary &Model,
               StringMap<std::vector<DimRange>> *Ranges) {
  ImportOptions Opts;
  const ModelSummary *S = &Model;
  for (StringRef Arg : Args) {
    auto [Name, Value] = Arg.split('=');
    if (Name.empty() || !Arg.contains('='))
      return usageError("--shape '" + Arg + "': expected NAME=DIMS");
    const ValueSummary *Input = nullptr;
    for (const ValueSummary &I : S->Inputs)
      if (I.Name == Name)
        Input = &I;
    if (!Input) {
      int64_t Size;
      if (Value.trim().getAsInteger(10, Size) || Size < 0 ||
          Size > MaxDimSize) {
        std::string Names;
        for (const ValueSummary &I : S->Inputs)
          Names += (Names.empty() ? "" : ", ") + I.Name;
        return usageError("--shape '" + Arg + "': the model has no input '" +
                          Name + "' (inputs: " + Names +
                          "), and as a dim symbol it needs one size");
      }
      Opts.SymbolSizes[Name] = Size;
      continue;
    }
    if (Value.contains("..")) {
      if (!Ranges)
        return usageError("--shape '" + Arg +
                          "': ranges (dynamic shapes) are taken by `solder "
                          "compile` and `solder bench`; this command runs "
                          "one shape (compile a dynamic plan, then bench "
                          "it with --run-shape)");
      Expected<std::vector<DimRange>> R = parseDimRanges(Value);
      if (!R)
        return createStringError(inconvertibleErrorCode(),
                                 "--shape '" + Arg +
                                     "': " + toString(R.takeError()));
      if (Input->Rank >= 0 && size_t(Input->Rank) != R->size())
        return usageError(formatv("--shape '{0}': input '{1}' has rank {2} "
                                  "({3}), the ranges have {4} dims",
                                  Arg, Name, Input->Rank, Input->TypeText,
                                  R->size()));
      (*Ranges)[Name] = std::move(*R);
      continue;
    }
    Expected<std::vector<int64_t>> Dims = parseDims(Value);
    if (!Dims)
      return createStringError(inconvertibleErrorCode(),
                               "--shape '" + Arg +
                                   "': " + toString(Dims.takeError()));
    if (Input->Rank >= 0 && size_t(Input->Rank) != Dims->size())
      return usageError(formatv("--shape '{0}': input '{1}' has rank {2} "
                                "({3}), the shape given has rank {4}",
                                Arg, Name, Input->Rank, Input->TypeText,
                                Dims->size()));
    for (size_t I = 0; I < Input->StaticDims.size() && I < Dims->size(); ++I)
      if (Input->StaticDims[I] >= 0 && Input->StaticDims[I] != (*Dims)[I])
        return usageError(formatv("--shape '{0}': dim {1} of input '{2}' is "
                                  "fixed to {3} ({4})",
                                  Arg, I, Name, Input->StaticDims[I],
                                  Input->TypeText));
    Opts.InputShapes[Name] = std::move(*Dims);
  }
  return Opts;
}

void bindUnboundDimsToOne(const ModelSummary &Model, ImportOptions &Opts,
                          raw_ostream &Notes) {
  // Symbols the given shapes already fix (BERT: --shape input_ids=8x77
  // binds B and S, which attention_mask shares): not defaulted.
  StringMap<int64_t> FromShapes;
  for (const ValueSummary &In : Model.Inputs) {
    auto Given = Opts.InputShapes.find(In.Name);
    if (Given == Opts.InputShapes.end())
      continue;
    for (size_t I = 0; I < In.DimSymbols.size() && I < Given->second.size();
         ++I)
      if (!In.DimSymbols[I].empty())
        FromShapes.try_emplace(In.DimSymbols[I], Given->second[I]);
  }
  for (const ValueSummary &In : Model.Inputs) {
    if (In.Rank < 0 || Opts.InputShapes.count(In.Name))
      continue;
    std::vector<int64_t> Dims;
    bool Filled = false;
    for (int I = 0; I < In.Rank; ++I) {
      if (In.StaticDims[I] >= 0) {
        Dims.push_back(In.StaticDims[I]);
        continue;
      }
      const std::string &Sym = In.DimSymbols[I];
      auto Bound =
          Sym.empty() ? Opts.SymbolSizes.end() : Opts.SymbolSizes.find(Sym);
      if (Bound != Opts.SymbolSizes.end()) {
        Dims.push_back(Bound->second);
        continue;
      }
      if (auto It = Sym.empty() ? FromShapes.end() : FromShapes.find(Sym);
          It != FromShapes.end()) {
        Dims.push_back(It->second);
        Filled = true; // completed from the given shapes: no note
        continue;
      }
      Dims.push_back(1);
      Filled = true;
      if (!Sym.empty()) {
        // One note per symbol; every input that shares it agrees.
        Opts.SymbolSizes[Sym] = 1;
        Notes << formatv("note: dim symbol '{0}' (input '{1}' dim {2}) is "
                         "not given: using 1; give it with --shape {0}=SIZE\n",
                         Sym, In.Name, I);
      } else {
        Notes << formatv("note: input '{0}' dim {1} is dynamic and not "
                         "given: using 1; give it with --shape {0}=DIMS\n",
                         In.Name, I);
      }
    }
    if (Filled)
      Opts.InputShapes[In.Name] = std::move(Dims);
  }
}

Expected<std::pair<StringRef, StringRef>> splitInputArg(StringRef Arg) {
  std::pair<StringRef, StringRef> NF = Arg.split('=');
  if (NF.first.empty() || NF.second.empty())
    return usageError("--input '" + Arg + "': expected NAME=FILE");
  return NF;
}

Error checkPassNames(ArrayRef<std::string> Names) {
  std::vector<std::string> Known = pipelinePassNames();
  for (const std::string &N : Names)
    if (!is_contained(Known, N))
      return usageError("unknown pass '" + N +
                        "' (passes: " + join(Known, ", ") + ")");
  return Error::success();
}

Expected<std::vector<int64_t>> concreteInputDims(const Value &Input,
                                                 const ImportOptions &Opts) {
  std::vector<int64_t> Dims;
  auto Given = Opts.InputShapes.find(Input.name());
  for (unsigned I = 0; I < Input.shape().size(); ++I) {
    const Dim &D = Input.shape()[I];
    if (D.isStatic()) {
      Dims.push_back(D.size());
      continue;
    }
    if (Given != Opts.InputShapes.end() && I < Given->second.size()) {
      Dims.push_back(Given->second[I]);
      continue;
    }
    if (D.isSymbol()) {
      auto It = Opts.SymbolSizes.find(D.symbol());
      if (It != Opts.SymbolSizes.end()) {
        Dims.push_back(It->second);
        continue;
      }
    }
    return usageError(formatv(
        "input '{0}' ({1}): dim {2} is {3}; give its size with --shape "
        "{0}=DIMS{4}",
        Input.name(), typeToString(Input.type()), I,
        D.isSymbol() ? "symbol '" + D.symbol() + "'" : std::string("unknown"),
        D.isSymbol() ? " or --shape " + D.symbol() + "=SIZE" : std::string()));
  }
  return Dims;
}

FusionFlags::FusionFlags(cl::SubCommand &Sub, cl::OptionCategory &Cat)
    : NoFusion("no-fusion",
               cl::desc("Form no fused groups: every op runs as its own "
                        "step (batchnorm folding and pattern recognition "
                        "still run)"),
               cl::sub(Sub), cl::cat(Cat)),
      FuseAttention(
          "fuse-attention",
          cl::desc("Run every scaled dot-product attention as one Attention "
                   "op (one generated flash-attention kernel on the GPU). "
                   "Without it, fp16/bf16 GPU plans fuse only attention "
                   "whose kernel grid fills the GPU (B*H*ceil(Sq/64) >= "
                   "128) or that has at most 256 keys, where it was "
                   "measured faster"),
          cl::sub(Sub), cl::cat(Cat)),
      NoFuseAttention("no-fuse-attention",
                      cl::desc("Fuse no attention, not even the automatic "
                               "fp16/bf16 cases"),
                      cl::sub(Sub), cl::cat(Cat)),
      DeferNorms("defer-norms",
                 cl::desc("f16/bf16: defer each LayerNorm read by matmuls "
                          "and residual adds into them (they take its input "
                          "and row statistics; generated GEMMs compute the "
                          "statistics themselves, so no LayerNorm kernel "
                          "runs). Experimental: correct, but slower so far "
                          "(the corrections' loads in the GEMM epilogues "
                          "cost more than the LayerNorm kernels), and not "
                          "tried by compile --tune"),
                 cl::sub(Sub), cl::cat(Cat)),
      Disabled("disable-fusion", cl::value_desc("id|onnx-node"),
               cl::desc("Do not form one fused group: a group id (as "
                        "--fusion-report prints it) or an ONNX node name "
                        "(no group containing that node is formed); "
                        "repeatable"),
               cl::sub(Sub), cl::cat(Cat)),
      Gemm("gemm-kernels", cl::value_desc("auto|library|generated|wgmma"),
           cl::desc("Who runs matmul groups: library (cuBLASLt plus a "
                    "generated kernel for the rest of the epilogue), "
                    "generated (one generated tensor-core GEMM with the "
                    "whole epilogue, LayerNorm included; f16/bf16), wgmma "
                    "(the same with Hopper's wgmma main loop where it "
                    "applies, sm_90), or auto "
                    "(default: what compile --tune measured faster, else "
                    "the library)"),
           cl::init("auto"), cl::sub(Sub), cl::cat(Cat)),
      Attention("attention-kernels", cl::value_desc("auto|generated|cudnn"),
                cl::desc("Who runs attention groups: generated (solder's "
                         "flash-attention kernel), cudnn (cuDNN's fused "
                         "attention wherever it takes the group: f16/bf16, "
                         "additive or causal masks; every attention is then "
                         "fused), or auto (default: what "
                         "compile --tune measured faster, else generated)"),
                cl::init("auto"), cl::sub(Sub), cl::cat(Cat)),
      Conv("conv-epilogues", cl::value_desc("auto|fused|graph"),
           cl::desc("How convolution groups run: fused (cuDNN's "
                    "cudnnConvolutionBiasActivationForward for bias, "
                    "residual and ReLU, plus a generated kernel for the rest "
                    "of the chain), graph (the convolution and its whole "
                    "chain as one cuDNN operation graph, runtime fusion; "
                    "NHWC f16/bf16 groups), or auto (default: what compile "
                    "--tune measured faster, else fused)"),
           cl::init("auto"), cl::sub(Sub), cl::cat(Cat)),
      DependentLaunch(
          "dependent-launch",
          cl::desc("sm_90+: launch generated kernels as programmatic "
                   "dependents of the step before, so each starts while its "
                   "predecessor finishes (generated GEMMs fetch their "
                   "weights before waiting); compile --tune takes it with "
                   "every matmul generated where the whole plan measured "
                   "faster"),
          cl::sub(Sub), cl::cat(Cat)) {}

Expected<AttentionKernels> FusionFlags::attentionKernels() const {
  std::optional<AttentionKernels> A = parseAttentionKernels(Attention);
  if (!A)
    return usageError("--attention-kernels '" + Attention +
                      "': expected auto, generated or cudnn");
  return *A;
}

Expected<ConvEpilogues> FusionFlags::convEpilogues() const {
  std::optional<ConvEpilogues> C = parseConvEpilogues(Conv);
  if (!C)
    return usageError("--conv-epilogues '" + Conv +
                      "': expected auto, fused or graph");
  return *C;
}

Expected<GemmKernels> FusionFlags::gemmKernels() const {
  std::optional<GemmKernels> G = parseGemmKernels(Gemm);
  if (!G)
    return usageError("--gemm-kernels '" + Gemm +
                      "': expected auto, library, generated or wgmma");
  return *G;
}

Error checkDisabledFusions(ArrayRef<std::string> Values, const Graph &G) {
  for (StringRef D : Values) {
    if (D.empty())
      return usageError("--disable-fusion: expected a group id or an ONNX "
                        "node name, got nothing");
    if (all_of(D, isDigit))
      continue;
    if (none_of(G.nodes(), [&](const auto &N) { return N->name() == D; }))
      return usageError("--disable-fusion '" + D +
                        "': the model has no node of that name (give an ONNX "
                        "node name or a group id from --fusion-report)");
  }
  return Error::success();
}

Error FusionFlags::check(const Graph &G) const {
  return checkDisabledFusions(disabledFusions(), G);
}

/// The fields both option structs share, set from the flags.
template <typename OptionsT>
static Error applyFusionFlags(const FusionFlags &F, OptionsT &O) {
  Expected<GemmKernels> G = F.gemmKernels();
  if (!G)
    return G.takeError();
  Expected<AttentionKernels> A = F.attentionKernels();
  if (!A)
    return A.takeError();
  Expected<ConvEpilogues> C = F.convEpilogues();
  if (!C)
    return C.takeError();
  O.Gemm = *G;
  O.Attention = *A;
  O.Conv = *C;
  O.NoFusion = F.noFusion();
  O.FuseAttention = F.fuseAttention();
  O.DeferNorms = F.deferNorms();
  O.AutoAttention = F.autoAttention();
  O.DisabledFusions = F.disabledFusions();
  return Error::success();
}

Error FusionFlags::apply(PipelineOptions &PO) const {
  return applyFusionFlags(*this, PO);
}

Error FusionFlags::apply(ModelLoadOptions &Opts) const {
  Opts.DependentLaunch = DependentLaunch;
  return applyFusionFlags(*this, Opts);
}

PrecisionFlags::PrecisionFlags(cl::SubCommand &Sub, cl::OptionCategory &Cat)
    : Prec("precision", cl::value_desc("fp32|tf32|fp16|bf16"),
           cl::desc("Compute precision: fp32 (default, TF32 off), tf32 "
                    "(TF32 tensor cores in matmuls and convolutions), fp16 "
                    "or bf16 (float tensors stored reduced, fp32 "
                    "accumulation)"),
           cl::init("fp32"), cl::sub(Sub), cl::cat(Cat)),
      Io("io-precision", cl::value_desc("model|compute"),
         cl::desc("With fp16/bf16: the model's fp32 inputs and outputs keep "
                  "their type (model, default) or take the compute type "
                  "(compute)"),
         cl::init("model"), cl::sub(Sub), cl::cat(Cat)),
      Layout("layout", cl::value_desc("auto|nchw|nhwc"),
             cl::desc("Layout of 2-D convolutions: auto (default: NHWC for "
                      "fp16/bf16 on the GPU), nchw (as in ONNX), nhwc "
                      "(always)"),
             cl::init("auto"), cl::sub(Sub), cl::cat(Cat)) {}

Expected<Precision> PrecisionFlags::precision(bool AllowTF32) const {
  std::optional<Precision> P = parsePrecision(Prec);
  if (!P)
    return usageError("--precision '" + Prec +
                      "': expected fp32, tf32, fp16 or bf16");
  if (AllowTF32 && *P == Precision::F32)
    return Precision::TF32;
  return *P;
}

Expected<bool> PrecisionFlags::computeIo() const {
  if (Io != "model" && Io != "compute")
    return usageError("--io-precision '" + Io + "': expected model or compute");
  return Io == "compute";
}

Error PrecisionFlags::apply(Precision &P, bool &ComputeIo,
                            ConvLayout &L) const {
  Expected<Precision> Prec = precision();
  if (!Prec)
    return Prec.takeError();
  Expected<bool> C = computeIo();
  if (!C)
    return C.takeError();
  std::optional<ConvLayout> Lay = parseConvLayout(Layout);
  if (!Lay)
    return usageError("--layout '" + Layout + "': expected auto, nchw or nhwc");
  P = *Prec;
  ComputeIo = *C;
  L = *Lay;
  return Error::success();
}

Error PrecisionFlags::apply(PipelineOptions &PO) const {
  bool ComputeIo = false;
  if (Error E = apply(PO.Prec, ComputeIo, PO.Layout))
    return E;
  PO.KeepModelIo = !ComputeIo;
  return Error::success();
}

Expected<uint64_t> parseByteSize(StringRef Text, StringRef Flag) {
  StringRef Digits = Text.trim();
  StringRef Unit = Digits.drop_while(isDigit);
  Digits = Digits.take_front(Digits.size() - Unit.size());
  Unit.consume_back("iB") || Unit.consume_back("B");
  unsigned Shift = StringSwitch<unsigned>(Unit.lower())
                       .Case("", 0)
                       .Case("k", 10)
                       .Case("m", 20)
                       .Case("g", 30)
                       .Case("t", 40)
                       .Default(~0u);
  uint64_t N;
  if (Digits.empty() || Shift == ~0u || Digits.getAsInteger(10, N) ||
      N > (UINT64_MAX >> Shift))
    return usageError("--" + Flag + " '" + Text +
                      "': expected a byte count such as 4096, 64M or 16G");
  return N << Shift;
}

LimitFlags::LimitFlags(cl::SubCommand &Sub, cl::OptionCategory &Cat)
    : MaxConstant("max-constant-bytes", cl::value_desc("bytes"),
                  cl::desc("Constant folding leaves a node unfolded when a "
                           "result would be larger (default 64M)"),
                  cl::sub(Sub), cl::cat(Cat)),
      MaxTensor("max-tensor-bytes", cl::value_desc("bytes"),
                cl::desc("Refuse a model with a tensor of a larger static "
                         "size, naming its node (default 16G)"),
                cl::sub(Sub), cl::cat(Cat)) {}

Expected<size_t> LimitFlags::maxConstantBytes() const {
  if (MaxConstant.empty())
    return DefaultMaxConstantBytes;
  Expected<uint64_t> N = parseByteSize(MaxConstant, "max-constant-bytes");
  if (!N)
    return N.takeError();
  return size_t(std::min<uint64_t>(*N, SIZE_MAX));
}

Expected<uint64_t> LimitFlags::maxTensorBytes() const {
  if (MaxTensor.empty())
    return DefaultMaxTensorBytes;
  return parseByteSize(MaxTensor, "max-tensor-bytes");
}

Error LimitFlags::apply(PipelineOptions &PO) const {
  Expected<size_t> C = maxConstantBytes();
  if (!C)
    return C.takeError();
  Expected<uint64_t> T = maxTensorBytes();
  if (!T)
    return T.takeError();
  PO.MaxFoldedConstantBytes = *C;
  PO.MaxTensorBytes = *T;
  return Error::success();
}

DeviceMemoryFlag::DeviceMemoryFlag(cl::SubCommand &Sub, cl::OptionCategory &Cat)
    : Limit("max-device-memory", cl::value_desc("bytes"),
            cl::desc("Device memory the model may hold (weights and each "
                     "context's arena, I/O and workspace); loading or a "
                     "context beyond it fails, naming what did not fit"),
            cl::sub(Sub), cl::cat(Cat)) {}

Expected<uint64_t> DeviceMemoryFlag::bytes() const {
  if (Limit.empty())
    return 0;
  return parseByteSize(Limit, "max-device-memory");
}

void printTensorSummary(raw_ostream &OS, StringRef Name, const Tensor &T,
                        unsigned MaxValues) {
  OS << Name << ": " << typeToString(T.type());
  int64_t N = T.numElements();
  if (N > 0) {
    double Min = std::numeric_limits<double>::infinity(), Max = -Min, Sum = 0;
    int64_t NaNs = 0;
    for (int64_t I = 0; I < N; ++I) {
      double V = T.getDouble(I);
      if (std::isnan(V)) {
        ++NaNs;
        continue;
      }
      Min = std::min(Min, V);
      Max = std::max(Max, V);
      Sum += V;
    }
    if (NaNs < N)
      OS << format("  min %.6g max %.6g mean %.6g", Min, Max,
                   Sum / double(N - NaNs));
    if (NaNs)
      OS << "  (" << NaNs << " NaN)";
  }
  OS << "\n  [";
  for (int64_t I = 0; I < N && I < int64_t(MaxValues); ++I) {
    if (I)
      OS << ", ";
    if (isFloat(T.dtype()))
      OS << format("%.6g", T.getDouble(I));
    else if (T.dtype() == DType::Bool)
      OS << (T.getInt64(I) ? "true" : "false");
    else
      OS << T.getInt64(I);
  }
  if (N > int64_t(MaxValues))
    OS << ", ...";
  OS << "]\n";
}

} // namespace solder
