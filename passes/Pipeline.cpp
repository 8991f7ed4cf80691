//===- Pipeline.cpp - The ordered pass pipeline
//----------------------------===//
//
// The one place that decides which passes run and in what order:
//
//   identity-elimination   first, so folding and later pattern matching see
//                          through Identity/Dropout.
//   shape-folding   \      alternate until neither changes: folding a Shape
//   constant-folding /     makes its consumers constant, and a folded Reshape
//                          target makes a later Shape static.
//   dead-code-elimination  folding leaves whole shape sub-graphs and
//                          their weights unused.
//   norm-recognition       after folding, so eps, exponents and axes are
//                          constants; before batchnorm-folding, so that
//                          never takes a factor out of a pattern.
//   gelu-recognition       same reasons; its sqrt(2) and 0.5 are constants
//                          only after folding.
//   batchnorm-folding      after identity elimination and folding, so a
//                          BatchNormalization sees its conv and constant
//                          parameters; before conv-pad-legalization, which
//                          moves a ConvTranspose bias into a separate Add.
//                          These three remove the weights they replace.
//   conv-pad-legalization  GPU only, after folding so shapes are static:
//                          cuDNN takes one symmetric pad per dim.
//   matmul-broadcast-      GPU only: cuBLASLt's strided batch needs each
//     legalization         operand fully batched or not batched.
//   precision-conversion   fp16/bf16 plans: after folding (weights fold
//                          in fp32 first) and legalization, before fusion
//                          (the groups take the casts it inserts).
//   conv-layout            after precision-conversion (auto converts the
//                          fp16/bf16 convolutions) and conv-pad-
//                          legalization (which pads in NCHW); before
//                          fusion, so groups form around the NHWC convs
//                          and fold the boundary transposes into kernels.
//   attention-recognition  first of the fusion passes, so the Q K^T MatMul
//                          and its scale/mask chain are not taken as an
//                          epilogue group; after precision-conversion (it
//                          keeps the converted types).
//   attention-mask-floor   GPU, unless --attention-kernels generated: right
//                          after attention-recognition, so loop-fusion
//                          merges the floor into the mask's producer.
//   horizontal-matmul-     before epilogue-fusion, so the packed MatMul
//     fusion               takes the packed bias as its epilogue and the
//                          Slices it leaves are absorbed by their users.
//   norm-deferral          --defer-norms, f16/bf16 GPU plans: after
//                          horizontal-matmul-fusion (one packed QKV
//                          weight to fold gamma into) and attention-
//                          recognition (which matches the projections),
//                          before epilogue-fusion, which takes each
//                          ApplyRowStats into its matmul's chain.
//   epilogue-fusion        last, on the final ops (after legalization, so a
//                          group's anchor is what the library runs): each
//                          contraction takes its elementwise chain.
//   loop-fusion            after epilogue-fusion, so contractions keep their
//                          chains and only what is left forms row-reduction
//                          and loop groups. Both share one FusionState
//                          (group ids, user-disabled groups).
//   norm-epilogue-fusion   GPU only, after loop-fusion (it merges a
//                          matmul's contraction group with the LayerNorm
//                          group loop-fusion made after it).
//
//===----------------------------------------------------------------------===//
#include "passes/Pipeline.h"
#include "ir/AttentionSpec.h"
#include "ir/OpRegistry.h"
#include "ir/Printer.h"
#include "ir/SizeLimits.h"
#include "ir/Verifier.h"
#include "passes/AttentionMaskFloor.h"
#include "passes/AttentionRecognition.h"
#include "passes/BatchNormFolding.h"
#include "passes/ConstantFolding.h"
#include "passes/ConvLayout.h"
#include "passes/ConvPadLegalization.h"
#include "passes/DeadCodeElimination.h"
#include "passes/EpilogueFusion.h"
#include "passes/FusionSupport.h"
#include "passes/GeluRecognition.h"
#include "passes/HorizontalMatMulFusion.h"
#include "passes/IdentityElimination.h"
#include "passes/LoopFusion.h"
#include "passes/MatMulBroadcastLegalization.h"
#include "passes/NormDeferral.h"
#include "passes/NormEpilogueFusion.h"
#include "passes/NormRecognition.h"
#include "passes/PrecisionConversion.h"
#include "passes/ShapeFolding.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <chrono>

namespace solder {

namespace {
/// A run of passes; a fixpoint stage repeats until no pass changes anything.
/// Its passes only replace nodes by constants, so every round that changes
/// something erases a node and the repetition ends; it takes one round per
/// level of Shape -> shape arithmetic -> Reshape -> Shape nesting, which a
/// fixed cap would cut short in deep models (Swin-T needs more than 16).
struct Stage {
  std::vector<std::unique_ptr<Pass>> Passes;
  bool Fixpoint = false;
};

std::vector<Stage> buildStages(const PipelineOptions &Opts,
                               FusionState &Fusion) {
  std::vector<Stage> S(3);
  S[0].Passes.push_back(std::make_unique<IdentityElimination>());
  S[1].Fixpoint = true;
  S[1].Passes.push_back(std::make_unique<ShapeFolding>());
  S[1].Passes.push_back(
      std::make_unique<ConstantFolding>(Opts.MaxFoldedConstantBytes));
  S[2].Passes.push_back(std::make_unique<DeadCodeElimination>());
  S.emplace_back();
  S.back().Passes.push_back(std::make_unique<NormRecognition>());
  S.back().Passes.push_back(std::make_unique<GeluRecognition>());
  S.back().Passes.push_back(std::make_unique<BatchNormFolding>());
  if (Opts.TargetGpu) {
    S.emplace_back();
    S.back().Passes.push_back(std::make_unique<ConvPadLegalization>());
    S.back().Passes.push_back(std::make_unique<MatMulBroadcastLegalization>());
  }
  S.emplace_back();
  S.back().Passes.push_back(std::make_unique<PrecisionConversion>(
      Opts.Prec, Opts.KeepModelIo, Opts.ReducedWeights));
  S.back().Passes.push_back(
      std::make_unique<ConvLayoutPass>(Opts.Layout, Opts.TargetGpu));
  if (!Opts.NoFusion) {
    S.emplace_back();
    bool Reduced = Opts.Prec == Precision::F16 || Opts.Prec == Precision::BF16;
    bool Auto = Opts.AutoAttention && Opts.TargetGpu && Reduced;
    // The automatic thresholds measure the generated kernel: with cuDNN
    // asked for, every attention is fused (e.g. 1x512, which cuDNN runs
    // faster than the unfused ops and the generated kernel slower).
    if (Opts.FuseAttention ||
        (Auto && Opts.Attention == AttentionKernels::Cudnn))
      S.back().Passes.push_back(std::make_unique<AttentionRecognition>(
          Fusion, Opts.TargetGpu ? MaxAttentionHeadDim : 0));
    else if (Auto)
      S.back().Passes.push_back(std::make_unique<AttentionRecognition>(
          Fusion, MaxAttentionHeadDim, AutoAttentionMinBlocks,
          AutoAttentionShortKeys));
    if (Opts.TargetGpu && Opts.Attention != AttentionKernels::Generated)
      S.back().Passes.push_back(std::make_unique<AttentionMaskFloor>());
    S.back().Passes.push_back(
        std::make_unique<HorizontalMatMulFusion>(Fusion, Opts.ReducedWeights));
    if (Opts.DeferNorms && Opts.TargetGpu && Reduced)
      S.back().Passes.push_back(std::make_unique<NormDeferral>());
    S.back().Passes.push_back(std::make_unique<EpilogueFusion>(Fusion));
    S.back().Passes.push_back(std::make_unique<LoopFusion>(Fusion));
    if (Opts.TargetGpu)
      S.back().Passes.push_back(std::make_unique<NormEpilogueFusion>(Fusion));
  }
  return S;
}

bool isDisabled(const PipelineOptions &Opts, llvm::StringRef Name) {
  return std::find(Opts.DisabledPasses.begin(), Opts.DisabledPasses.end(),
                   Name.str()) != Opts.DisabledPasses.end();
}

llvm::Error dumpGraph(const Graph &G, const PipelineOptions &Opts,
                      unsigned &Counter, llvm::StringRef Label) {
  if (Opts.DumpAfterAllDir.empty())
    return llvm::Error::success();
  std::string Path =
      llvm::formatv("{0}/{1:2}-{2}.ir", Opts.DumpAfterAllDir, Counter++, Label);
  std::error_code EC;
  llvm::raw_fd_ostream OS(Path, EC);
  if (EC)
    return makeError("cannot write '" + Path + "': " + EC.message());
  PrintOptions P;
  P.ElideLargeConstants = true;
  printGraph(OS, G, P);
  return llvm::Error::success();
}
} // namespace

std::vector<std::string> pipelinePassNames() {
  std::vector<std::string> Names;
  PipelineOptions All;
  All.TargetGpu = true;
  All.FuseAttention = true; // else attention-recognition is left out
  All.DeferNorms = true;
  All.Prec = Precision::F16;
  FusionState Fusion({});
  for (Stage &S : buildStages(All, Fusion))
    for (auto &P : S.Passes)
      Names.push_back(P->name().str());
  return Names;
}

/// Adds Seconds to Pass's entry (appended on its first run).
static void addPassTime(std::vector<std::pair<std::string, double>> &Times,
                        llvm::StringRef Pass, double Seconds) {
  auto It =
      llvm::find_if(Times, [&](const auto &T) { return T.first == Pass; });
  if (It == Times.end())
    Times.push_back({Pass.str(), Seconds});
  else
    It->second += Seconds;
}

llvm::Error runPipeline(Graph &G, const PipelineOptions &Opts) {
  for (const std::string &D : Opts.DisabledPasses) {
    auto Names = pipelinePassNames();
    if (std::find(Names.begin(), Names.end(), D) == Names.end())
      return makeError("unknown pass '" + D + "' in --disable-pass");
  }
  if (!Opts.DumpAfterAllDir.empty())
    if (auto EC = llvm::sys::fs::create_directories(Opts.DumpAfterAllDir))
      return makeError("cannot create '" + Opts.DumpAfterAllDir +
                       "': " + EC.message());
  unsigned Counter = 0;
  if (auto E = dumpGraph(G, Opts, Counter, "input"))
    return E;
  if (auto E = checkTensorSizes(G, Opts.MaxTensorBytes))
    return E;
  DecisionLog Log;
  FusionState Fusion(Opts.DisabledFusions);
  Fusion.reserveIdsOf(G);
  for (Stage &S : buildStages(Opts, Fusion)) {
    const size_t MaxRounds = S.Fixpoint ? G.nodes().size() + 1 : 1;
    for (size_t Round = 0; Round < MaxRounds; ++Round) {
      bool Changed = false;
      for (auto &P : S.Passes) {
        if (isDisabled(Opts, P->name()))
          continue;
        Log.clear();
        auto Start = std::chrono::steady_clock::now();
        llvm::Expected<bool> C = P->run(G, Log);
        if (Opts.PassSeconds)
          addPassTime(*Opts.PassSeconds, P->name(),
                      std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - Start)
                          .count());
        if (!C)
          return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                         P->name() + ": " +
                                             llvm::toString(C.takeError()));
        Changed |= *C;
        if (Opts.DebugStream)
          for (const std::string &Line : Log.entries())
            *Opts.DebugStream << "[" << P->name() << "] " << Line << "\n";
        if (Opts.Decisions)
          for (DecisionRecord R : Log.records()) {
            R.Pass = P->name().str();
            Opts.Decisions->push_back(std::move(R));
          }
        if (Opts.VerifyEachPass)
          if (auto E = verifyGraph(G))
            return makeError("IR invalid after " + P->name() + ": " +
                             llvm::toString(std::move(E)));
        if (auto E = dumpGraph(G, Opts, Counter, P->name()))
          return E;
      }
      if (!S.Fixpoint || !Changed)
        break;
    }
    if (auto E = checkTensorSizes(G, Opts.MaxTensorBytes))
      return E;
  }
  return llvm::Error::success();
}

} // namespace solder
