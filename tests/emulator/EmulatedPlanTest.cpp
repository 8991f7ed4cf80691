//===- EmulatedPlanTest.cpp - Whole GPU plans, on the CPU -----------------===//
//
// Builds GPU plans (sm_90, offline) of the bundled models and, where
// ../shared is present, the shared ones and the ONNX node suite, in fp32,
// fp16 and bf16; runs the reference executor over the compiled graph
// keeping every value; then runs the plan step by step on host memory
// (the arena poisoned with NaN): generated kernels in the emulator
// (KernelEmulator.h), cuBLASLt and cuDNN steps from their configurations
// (LibraryEmulator.h), groups with inline-PTX kernels filled in from the
// reference. Before each group its operands must still hold the
// reference's values (a buffer reused too early fails here) and are then
// set to them; after it its results are compared, as `solder compare` does
// on a GPU (same tolerances); last, the model's outputs. The negative twin
// perturbs one group's kernel (CodegenOptions::PerturbGroupId) and expects
// exactly that group to fail.
//
//===----------------------------------------------------------------------===//
#include "EmuAbi.h"
#include "KernelEmulator.h"
#include "LibraryEmulator.h"
#include "codegen/KernelEmitter.h"
#include "codegen/WgmmaGemm.h"
#include "frontend/OnnxImporter.h"
#include "ir/FusedGroup.h"
#include "ir/Graph.h"
#include "ir/Parser.h"
#include "passes/Pipeline.h"
#include "runtime/cuda/PlanBuilder.h"
#include "runtime/cuda/PlanFile.h"
#include "runtime/reference/ReferenceExecutor.h"
#include "tests/GemmGroupGraph.h"
#include "tools/RandomInputs.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <algorithm>
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <iostream>
#include <map>
#include <set>

using namespace solder;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool Sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool Sanitized = true;
#else
constexpr bool Sanitized = false;
#endif
#else
constexpr bool Sanitized = false;
#endif

std::string emulatorCacheDir() {
  llvm::SmallString<256> Dir(SOLDER_BINARY);
  llvm::sys::path::remove_filename(Dir);
  llvm::sys::path::append(Dir, "..", "emulator-cache");
  return std::string(Dir.str());
}

struct Model {
  std::string Path;
  llvm::StringMap<int64_t> Symbols;
  Precision Prec = Precision::F32;
  bool FuseAttention = false;
  /// Attention fused where fp16/bf16 plans fuse it by default.
  bool AutoAttention = true;
  /// Every op its own step (--no-fusion).
  bool NoFusion = false;
  /// Who runs matmul groups (--gemm-kernels).
  GemmKernels Gemm = GemmKernels::Auto;
  /// Who runs attention groups (--attention-kernels).
  AttentionKernels Attention = AttentionKernels::Auto;
  /// How convolution groups run (--conv-epilogues).
  ConvEpilogues Conv = ConvEpilogues::Auto;
  /// Kernels with the dependent-launch prologue (--dependent-launch).
  bool DependentLaunch = false;
  /// Generated GEMMs of groups with a row normalization run split: the
  /// GEMM, then a row kernel (PlanOptions::SplitNormGroups, as tuning's
  /// chain of dependent launches has them).
  bool SplitNorm = false;
  /// LayerNorms deferred into their matmuls and residual adds
  /// (--defer-norms).
  bool DeferNorms = false;
  /// Kernels as a dynamic model's variants have them, their varying
  /// lengths as parameters (CodegenOptions::ShapeParams).
  bool ShapeParams = false;
  /// A model the GPU path cannot plan (an op it lacks, dynamic inputs) is
  /// noted in Outcome::NotBuilt instead of failing the test.
  bool Lenient = false;
};

/// The emulator's tensor map (EmuAbi.h) of S over the buffer at Base, in
/// a kernel's 128-byte tensor-map parameter.
struct alignas(64) EmuTensorMap {
  unsigned char Bytes[128] = {};
  EmuTensorMap(const TensorMapShape &S, const void *Base) {
    SolderEmuTensorMap M;
    M.Base = Base;
    M.Dims[0] = S.Dims[0];
    M.Dims[1] = S.Dims[1];
    M.RowBytes = S.RowBytes;
    M.Box[0] = S.Box[0];
    M.Box[1] = S.Box[1];
    M.ElemBytes = unsigned(dtypeSize(S.Elem));
    static_assert(sizeof(M) <= sizeof(Bytes), "fits the parameter");
    std::memcpy(Bytes, &M, sizeof(M));
  }
};

/// What happened to the groups of one plan.
struct Outcome {
  /// Groups computed here (Library of them with a library call), and
  /// groups with an inline-PTX kernel, whose results the reference gave.
  unsigned Emulated = 0, Library = 0, Ptx = 0;
  /// Attention groups the plan runs as cuDNN calls; its kernels fed by
  /// TMA (with tensor maps).
  unsigned AttentionCalls = 0, TmaKernels = 0;
  /// Convolutions the plan runs as cuDNN operation graphs.
  unsigned ConvGraphs = 0;
  /// Kernels that fetch constant weights before waiting for the previous
  /// grid (dependent launches of the TMA GEMM).
  unsigned PrefetchKernels = 0;
  /// Groups with a row normalization planned split (Model::SplitNorm).
  unsigned SplitGroups = 0;
  /// Generated GEMMs that compute a deferred LayerNorm's statistics, and
  /// plan groups with no step of their own (those LayerNorms).
  unsigned StatsKernels = 0, StagedCorrections = 0;
  /// Cooperative kernels (row statistics through global memory) and the
  /// plan's scratch bytes.
  unsigned Cooperative = 0;
  uint64_t ScratchBytes = 0;
  /// Kernels taking more counts than their outermost loop's (lengths as
  /// parameters, Model::ShapeParams).
  unsigned LengthParamKernels = 0;
  /// How the plan runs each attention group (PlanGroup::RunsAs).
  std::vector<std::string> AttentionRunsAs;
  /// Ids (or labels) of the groups whose results differ, with why.
  std::map<std::string, std::string> Failed;
  /// Ids of the emulated groups.
  std::vector<int64_t> EmulatedIds;
  /// Why no plan was built (a lenient run only; otherwise a test failure).
  std::string NotBuilt;
};

/// `solder compare`'s group tolerance: the plan's precision sets it, since
/// a reduced-precision plan also rounds what reaches an f32 result.
double tolerance(DType T, Precision Prec) {
  if (T == DType::BF16 || Prec == Precision::BF16)
    return 3e-2;
  if (T == DType::F16 || Prec == Precision::F16)
    return 1e-2;
  return 1e-4;
}

/// max |a - b| against max |b| (scaled, as `solder compare` measures), or
/// the reason it cannot be compared.
std::string compareValue(const Tensor &Got, const Tensor &Want, double Tol) {
  if (Got.numElements() != Want.numElements())
    return "element counts differ";
  bool Float = isFloat(Want.dtype());
  double MaxAbs = 0, MaxRef = 0;
  int64_t Worst = -1;
  for (int64_t I = 0; I < Want.numElements(); ++I) {
    double A = Got.getDouble(I), B = Want.getDouble(I);
    if (std::isnan(B) && std::isnan(A))
      continue;
    double D = std::isnan(A) || std::isnan(B) ? INFINITY : std::fabs(A - B);
    if (std::isinf(A) && std::isinf(B) && (A > 0) == (B > 0))
      D = 0;
    if (std::isfinite(B))
      MaxRef = std::max(MaxRef, std::fabs(B));
    if (D > MaxAbs) {
      MaxAbs = D;
      Worst = I;
    }
  }
  double Bound = Float ? 1e-5 + Tol * MaxRef : 0;
  if (MaxAbs <= Bound)
    return "";
  return "max |emulated - reference| " + std::to_string(MaxAbs) +
         " at element " + std::to_string(Worst) + " (emulated " +
         std::to_string(Got.getDouble(Worst)) + ", reference " +
         std::to_string(Want.getDouble(Worst)) + "), max |reference| " +
         std::to_string(MaxRef);
}

Outcome emulateGraph(Graph &G, const Model &M, int64_t PerturbGroupId);

/// Builds the plan of M (PerturbGroupId: see CodegenOptions), runs the
/// reference, and emulates every kernel-only group.
Outcome emulatePlan(const Model &M, int64_t PerturbGroupId = -1) {
  ImportOptions IO;
  for (const auto &S : M.Symbols)
    IO.SymbolSizes[S.getKey()] = S.getValue();
  auto G = importOnnxFile(M.Path, IO);
  if (!G) {
    Outcome O;
    O.NotBuilt = llvm::toString(G.takeError());
    if (!M.Lenient)
      ADD_FAILURE() << M.Path << ": " << O.NotBuilt;
    return O;
  }
  return emulateGraph(**G, M, PerturbGroupId);
}

/// emulatePlan's work on an imported graph (M's path names it).
Outcome emulateGraph(Graph &G, const Model &M, int64_t PerturbGroupId) {
  Outcome O;
  auto NotBuilt = [&](llvm::Error E) {
    O.NotBuilt = llvm::toString(std::move(E));
    if (!M.Lenient)
      ADD_FAILURE() << M.Path << ": " << O.NotBuilt;
    return O;
  };
  PipelineOptions PO;
  PO.TargetGpu = true;
  PO.Prec = M.Prec;
  PO.FuseAttention = M.FuseAttention;
  PO.AutoAttention = M.AutoAttention;
  PO.NoFusion = M.NoFusion;
  PO.Gemm = M.Gemm;
  PO.DeferNorms = M.DeferNorms;
  if (llvm::Error E = runPipeline(G, PO))
    return NotBuilt(std::move(E));
  PlanOptions PlanOpts;
  PlanOpts.Arch = "sm_90";
  PlanOpts.Prec = M.Prec;
  PlanOpts.PerturbGroupId = PerturbGroupId;
  PlanOpts.Gemm = M.Gemm;
  PlanOpts.Attention = M.Attention;
  PlanOpts.Conv = M.Conv;
  PlanOpts.DependentLaunch = M.DependentLaunch;
  PlanOpts.ShapeParams = M.ShapeParams;
  if (M.SplitNorm)
    for (const auto &N : G.nodes())
      if (isFusedGroup(*N) && normSplitValue(*N))
        PlanOpts.SplitNormGroups.insert(groupInfo(*N).Id);
  O.SplitGroups = unsigned(PlanOpts.SplitNormGroups.size());
  llvm::Expected<Plan> Built = buildPlan(G, PlanOpts);
  if (!Built)
    return NotBuilt(Built.takeError());
  // What runs is the plan as its file holds it: a field the file format
  // drops would change what the emulator computes.
  llvm::Expected<Plan> P = deserializePlan(serializePlan(*Built));
  if (!P)
    return NotBuilt(P.takeError());
  O.AttentionCalls = unsigned(P->Attentions.size());
  for (const ConvConfig &C : P->Convs)
    O.ConvGraphs += C.Graph;
  O.ScratchBytes = P->ScratchBytes;
  for (const PlanKernel &K : P->Kernels) {
    O.Cooperative += K.Cooperative;
    O.LengthParamKernels += K.Counts.size() > 1;
    O.TmaKernels += !K.TensorMaps.empty();
    O.PrefetchKernels +=
        K.Summary.find("B fetched before the previous grid ends") !=
        std::string::npos;
    O.StatsKernels +=
        K.Summary.find("for a deferred LayerNorm") != std::string::npos;
    O.StagedCorrections +=
        K.Summary.find("deferred LayerNorm added in the staged copy-out") !=
        std::string::npos;
  }
  for (const PlanGroup &PG : P->Groups)
    if (PG.Kind == "attention")
      O.AttentionRunsAs.push_back(PG.RunsAs);

  // Every value of the compiled graph, from the reference executor.
  Graph &Compiled = G;
  std::vector<Tensor> Inputs;
  RandomGenerator Gen(7);
  // Integers from 1: an integer division by zero traps on the CPU (the GPU
  // returns a value, which ONNX leaves undefined anyway).
  RandomOptions Random;
  Random.IntLow = 1;
  for (const Value *In : Compiled.inputs())
    Inputs.push_back(makeRandomTensor(In->type().Elem, In->type().staticDims(),
                                      Random, Gen));
  std::set<const Value *> Outputs(Compiled.outputs().begin(),
                                  Compiled.outputs().end());
  std::vector<const Value *> Kept(Compiled.outputs().begin(),
                                  Compiled.outputs().end());
  for (const auto &N : Compiled.nodes())
    for (Value *V : N->results())
      if (Outputs.insert(V).second) {
        Compiled.addOutput(V);
        Kept.push_back(V);
      }
  auto Ref = runReference(Compiled, Inputs);
  if (!Ref)
    return NotBuilt(Ref.takeError());
  std::map<std::string, Tensor> Values;
  for (size_t I = 0; I < Kept.size(); ++I)
    Values[Kept[I]->name()] = (*Ref)[I];
  for (size_t I = 0; I < Inputs.size(); ++I)
    Values[Compiled.inputs()[I]->name()] = Inputs[I];

  // The steps of each group; kernels compiled unless they carry inline PTX,
  // which makes their group one filled in from the reference.
  std::vector<int> GroupOf(P->Steps.size(), -1);
  std::vector<bool> Substituted(P->Groups.size(), false);
  std::vector<std::pair<std::string, std::string>> Sources;
  std::map<std::string, size_t> KernelAt;
  for (size_t GI = 0; GI < P->Groups.size(); ++GI)
    for (uint32_t S : P->Groups[GI].Steps) {
      GroupOf[S] = int(GI);
      const PlanStep &St = P->Steps[S];
      if (St.K != PlanStep::Kind::Kernel)
        continue;
      const PlanKernel &K = P->Kernels[St.Index];
      if (!emu::whyNotEmulated(K.Source).empty())
        Substituted[GI] = true;
      else if (KernelAt.emplace(K.Name, Sources.size()).second)
        Sources.push_back({K.Name, K.Source});
    }
  auto Kernels = emu::compileKernels(Sources, emulatorCacheDir());
  EXPECT_TRUE(bool(Kernels)) << llvm::toString(Kernels.takeError());
  if (!Kernels)
    return O;

  // The whole plan on host memory: the arena poisoned with NaN, the model's
  // inputs in place.
  std::string Weights = P->Weights.str();
  std::vector<unsigned char> Arena(P->ArenaBytes + 256, 0xFF);
  std::vector<std::vector<unsigned char>> Ins, Outs;
  for (size_t I = 0; I < P->Inputs.size(); ++I) {
    Ins.emplace_back(P->Inputs[I].bytes() + 256, 0xFF);
    std::memcpy(Ins.back().data(), Inputs[I].rawData(), Inputs[I].byteSize());
  }
  for (const PlanTensor &T : P->Outputs)
    Outs.emplace_back(T.bytes() + 256, 0xFF);
  std::vector<unsigned char> Scratch(P->ScratchBytes, 0);
  auto Where = [&](const BufferRef &R) -> void * {
    switch (R.Space) {
    case BufferSpace::Arena:
      return Arena.data() + R.Offset;
    case BufferSpace::Input:
      return Ins[R.Index].data() + R.Offset;
    case BufferSpace::Output:
      return Outs[R.Index].data() + R.Offset;
    case BufferSpace::Weights:
      return Weights.data() + R.Offset;
    case BufferSpace::Scratch:
      return Scratch.data() + R.Offset;
    }
    return nullptr;
  };
  auto Reference = [&](const std::string &Name) -> const Tensor * {
    auto It = Values.find(Name);
    return It == Values.end() ? nullptr : &It->second;
  };
  auto Check = [&](const PlanValue &V, const char *Role) -> std::string {
    const Tensor *Want = Reference(V.Name);
    if (!Want)
      return std::string("no reference value for ") + Role + " " + V.Name;
    Tensor Got = Tensor::copyOf(V.Elem, V.Dims, Where(V.Ref));
    std::string D = compareValue(Got, *Want, tolerance(V.Elem, M.Prec));
    return D.empty() ? "" : std::string(Role) + " " + V.Name + ": " + D;
  };

  std::vector<bool> Started(P->Groups.size(), false);
  std::vector<std::string> Why(P->Groups.size());
  for (size_t S = 0; S < P->Steps.size(); ++S) {
    const PlanStep &St = P->Steps[S];
    int GI = GroupOf[S];
    if (GI >= 0 && !Started[size_t(GI)]) {
      // A group's operands: what earlier steps left must still be there
      // (a buffer reused too early shows here), then the reference's
      // values, so each group is checked on its own.
      Started[size_t(GI)] = true;
      for (const PlanValue &V : P->Groups[size_t(GI)].Operands) {
        if (V.Ref.Space == BufferSpace::Weights)
          continue;
        std::string D = Check(V, "operand");
        if (!D.empty() && Why[size_t(GI)].empty())
          Why[size_t(GI)] = "before it ran: " + D;
        if (const Tensor *T = Reference(V.Name))
          std::memcpy(Where(V.Ref), T->rawData(), T->byteSize());
      }
    }
    bool Last = GI >= 0 && P->Groups[size_t(GI)].Steps.back() == S;
    if (GI >= 0 && Substituted[size_t(GI)]) {
      if (Last)
        for (const PlanValue &V : P->Groups[size_t(GI)].Results)
          if (const Tensor *T = Reference(V.Name))
            std::memcpy(Where(V.Ref), T->rawData(), T->byteSize());
      continue;
    }
    llvm::Error E = llvm::Error::success();
    switch (St.K) {
    case PlanStep::Kind::Kernel: {
      const PlanKernel &K = P->Kernels[St.Index];
      std::vector<void *> Args;
      for (const BufferRef &R : St.Args)
        Args.push_back(Where(R));
      // Tensor maps after the pointers, of the buffers they name.
      std::vector<EmuTensorMap> Maps;
      for (const PlanTensorMap &T : K.TensorMaps)
        Maps.emplace_back(T, Args[T.Arg]);
      for (EmuTensorMap &M : Maps)
        Args.push_back(M.Bytes);
      // Counts by value, in a pointer-sized argument as the kernel's
      // `long long` parameter receives it.
      for (int64_t C : K.Counts)
        Args.push_back(reinterpret_cast<void *>(static_cast<intptr_t>(C)));
      E = (*Kernels)[KernelAt[K.Name]]->launch(K.Grid, K.Block,
                                               K.DynamicSharedBytes, Args);
      break;
    }
    case PlanStep::Kind::Gemm:
      E = emu::runGemm(P->Gemms[St.Index], Where);
      break;
    case PlanStep::Kind::Conv:
      E = emu::runConv(P->Convs[St.Index], Where);
      break;
    case PlanStep::Kind::Attention:
      E = emu::runAttention(P->Attentions[St.Index], Where);
      break;
    case PlanStep::Kind::Copy: {
      const CopyConfig &C = P->Copies[St.Index];
      std::memmove(Where(C.Dst), Where(C.Src), C.Bytes);
      break;
    }
    }
    if (E) {
      std::string Msg =
          "step " + St.Label + ": " + llvm::toString(std::move(E));
      if (GI < 0)
        O.Failed["step " + std::to_string(S)] = Msg;
      else if (Why[size_t(GI)].empty())
        Why[size_t(GI)] = Msg;
    }
    if (!Last)
      continue;
    const PlanGroup &PG = P->Groups[size_t(GI)];
    for (const PlanValue &V : PG.Results) {
      std::string D = Check(V, "result");
      if (!D.empty() && Why[size_t(GI)].empty())
        Why[size_t(GI)] = D;
    }
    ++O.Emulated;
    O.EmulatedIds.push_back(PG.Id);
    for (uint32_t GS : PG.Steps)
      if (P->Steps[GS].K != PlanStep::Kind::Kernel) {
        ++O.Library;
        break;
      }
    if (!Why[size_t(GI)].empty())
      O.Failed[PG.Kind + " " + std::to_string(PG.Id) + " (" +
               (PG.Members.empty() ? "" : PG.Members.front()) + ")"] =
          Why[size_t(GI)];
  }
  for (size_t GI = 0; GI < P->Groups.size(); ++GI)
    O.Ptx += Substituted[GI];
  // The model's outputs, where the plan left them.
  for (size_t I = 0; I < P->Outputs.size(); ++I) {
    const Tensor &Want = (*Ref)[I];
    Tensor Got =
        Tensor::copyOf(P->Outputs[I].Elem, P->Outputs[I].Dims, Outs[I].data());
    std::string D = compareValue(Got, Want, tolerance(Want.dtype(), M.Prec));
    if (!D.empty())
      O.Failed["output " + P->Outputs[I].Name] = D;
  }
  return O;
}

bool emulatorUsable() {
  if (Sanitized)
    return false; // fibers switch stacks under the sanitizer's feet
  return !emu::hostCompiler().empty();
}

std::string sharedModel(const char *Name) {
  const char *Dir = std::getenv("SOLDER_SHARED_DIR");
  std::string Path =
      std::string(Dir && *Dir ? Dir : SOLDER_SHARED_DIR) + "/models/" + Name;
  return llvm::sys::fs::exists(Path) ? Path : "";
}

std::string testData(const char *Name) {
  return std::string(SOLDER_TEST_DATA_DIR) + "/" + Name;
}

Outcome expectAllMatch(const Model &M, unsigned MinEmulated) {
  Outcome O = emulatePlan(M);
  std::cout << M.Path << ": " << O.Emulated << " groups run, " << O.Library
            << " of them with library calls, " << O.Ptx
            << " from the reference (inline PTX)\n";
  EXPECT_GE(O.Emulated, MinEmulated);
  for (const auto &[Group, Why] : O.Failed)
    ADD_FAILURE() << "group " << Group << ": " << Why;
  return O;
}

#define SKIP_WITHOUT_EMULATOR()                                                \
  if (!emulatorUsable())                                                       \
  GTEST_SKIP() << "no host C++ compiler, or a sanitizer build"

#define SKIP_WITHOUT_SHARED(Path)                                              \
  if (Path.empty())                                                            \
  GTEST_SKIP() << "../shared/models is not here"

} // namespace

TEST(EmulatedPlan, FusionChainAllPrecisions) {
  SKIP_WITHOUT_EMULATOR();
  for (Precision P : {Precision::F32, Precision::F16, Precision::BF16}) {
    SCOPED_TRACE(precisionName(P).str());
    expectAllMatch({testData("fusion_chain.onnx"), {}, P}, 1);
  }
}

TEST(EmulatedPlan, AttentionBlockSimtKernel) {
  SKIP_WITHOUT_EMULATOR();
  // fp32 attention runs as the SIMT flash kernel, which the emulator runs.
  expectAllMatch({testData("attention_block.onnx"),
                  {{"B", 2}},
                  Precision::F32,
                  /*FuseAttention=*/true},
                 1);
}

TEST(EmulatedPlan, CudnnAttentionCalls) {
  SKIP_WITHOUT_EMULATOR();
  // The attention group as one cuDNN call, computed here from the plan's
  // AttentionConfig: Q, K and V read at their offsets in the packed
  // projection, the [B, 1, 1, S] mask broadcast, O in the merged layout.
  for (Precision P : {Precision::F16, Precision::BF16}) {
    SCOPED_TRACE(precisionName(P).str());
    Model M{testData("attention_block.onnx"),
            {{"B", 2}},
            P,
            /*FuseAttention=*/true};
    M.Attention = AttentionKernels::Cudnn;
    Outcome O = expectAllMatch(M, 1);
    EXPECT_EQ(O.AttentionCalls, 1u);
    ASSERT_EQ(O.AttentionRunsAs.size(), 1u);
    EXPECT_NE(O.AttentionRunsAs[0].find("cuDNN"), std::string::npos);
  }
  std::string Bert = sharedModel("bert_mini_opset14.onnx");
  if (!Bert.empty()) {
    Model M{Bert,
            {{"B", 2}, {"S", 16}},
            Precision::F16,
            /*FuseAttention=*/true};
    M.Attention = AttentionKernels::Cudnn;
    Outcome O = expectAllMatch(M, 2);
    EXPECT_EQ(O.AttentionCalls, 2u)
        << "one call per layer: "
        << (O.AttentionRunsAs.empty() ? "" : O.AttentionRunsAs[0]);
  }
}

TEST(EmulatedPlan, CudnnConvGraphs) {
  SKIP_WITHOUT_EMULATOR();
  // Six convolution groups as cuDNN operation graphs, computed here from
  // the plan's graph description (operands through their NHWC strides,
  // RELU_FWD's clips and slope, scalars by value): bias + Clip, depthwise
  // + Clip, residual + Relu, SiLU, HardSwish, LeakyRelu.
  for (Precision P : {Precision::F16, Precision::BF16}) {
    SCOPED_TRACE(precisionName(P).str());
    Model M{testData("conv_chains.onnx"), {}, P};
    M.Conv = ConvEpilogues::Graph;
    Outcome O = expectAllMatch(M, 6);
    EXPECT_EQ(O.ConvGraphs, 6u);
  }
  // The twin: cuDNN's fused call and rest kernels compute the same.
  Model M{testData("conv_chains.onnx"), {}, Precision::F16};
  M.Conv = ConvEpilogues::Fused;
  Outcome O = expectAllMatch(M, 6);
  EXPECT_EQ(O.ConvGraphs, 0u);
}

TEST(EmulatedPlan, DependentLaunchKernelsComputeAsBefore) {
  SKIP_WITHOUT_EMULATOR();
  // The griddepcontrol prologue orders grids only; every kernel still runs
  // here (none falls back to the reference) and matches.
  for (Precision P : {Precision::F32, Precision::F16}) {
    SCOPED_TRACE(precisionName(P).str());
    Model M{testData("fusion_chain.onnx"), {}, P};
    M.DependentLaunch = true;
    Outcome O = expectAllMatch(M, 1);
    EXPECT_EQ(O.Ptx, 0u);
  }
  Model A{testData("attention_block.onnx"),
          {{"B", 2}},
          Precision::F16,
          /*FuseAttention=*/true};
  A.DependentLaunch = true;
  EXPECT_EQ(expectAllMatch(A, 1).Ptx, 0u);
}

TEST(EmulatedPlan, CudnnAttentionRefusesF32) {
  SKIP_WITHOUT_EMULATOR();
  // Negative twin: cuDNN's fused attention takes f16/bf16 only, so an f32
  // plan keeps the generated kernel and says why.
  Model M{testData("attention_block.onnx"),
          {{"B", 2}},
          Precision::F32,
          /*FuseAttention=*/true};
  M.Attention = AttentionKernels::Cudnn;
  Outcome O = expectAllMatch(M, 1);
  EXPECT_EQ(O.AttentionCalls, 0u);
  ASSERT_EQ(O.AttentionRunsAs.size(), 1u);
  EXPECT_NE(O.AttentionRunsAs[0].find("not cuDNN: cuDNN's fused attention "
                                      "takes f16 or bf16, not f32"),
            std::string::npos)
      << O.AttentionRunsAs[0];
}

TEST(EmulatedPlan, BertMini) {
  SKIP_WITHOUT_EMULATOR();
  std::string Path = sharedModel("bert_mini_opset14.onnx");
  SKIP_WITHOUT_SHARED(Path);
  for (Precision P : {Precision::F32, Precision::F16, Precision::BF16}) {
    SCOPED_TRACE(precisionName(P).str());
    expectAllMatch({Path, {{"B", 2}, {"S", 16}}, P}, 2);
  }
  Model Unfused{Path, {{"B", 2}, {"S", 16}}, Precision::F32};
  Unfused.NoFusion = true;
  expectAllMatch(Unfused, 50);
}

TEST(EmulatedPlan, VariantKernelsTakeTheirLengths) {
  // BERT-mini as a dynamic model's variants compile it (attention's
  // lengths and strides, the embeddings' rows per sequence and the mask's
  // Gather bound as parameters), at two shapes, against the reference.
  SKIP_WITHOUT_EMULATOR();
  std::string Path = sharedModel("bert_mini_opset14.onnx");
  SKIP_WITHOUT_SHARED(Path);
  for (auto [B, S] : {std::pair<int64_t, int64_t>{2, 16}, {3, 40}})
    for (Precision P : {Precision::F32, Precision::F16}) {
      SCOPED_TRACE(precisionName(P).str() + " " + std::to_string(B) + "x" +
                   std::to_string(S));
      Model M{Path, {{"B", B}, {"S", S}}, P};
      M.ShapeParams = true;
      Outcome O = expectAllMatch(M, 2);
      // The embeddings' row kernel, the mask's loop kernel and (f16, where
      // attention is fused) the two attention kernels.
      EXPECT_GE(O.LengthParamKernels, P == Precision::F16 ? 4u : 2u);
    }
}

TEST(EmulatedPlan, ConvNets) {
  SKIP_WITHOUT_EMULATOR();
  std::string Mobile = sharedModel("mobilenetv2_050_opset17.onnx");
  std::string Squeeze = sharedModel("squeezenet11_opset13.onnx");
  std::string Resnet = sharedModel("resnet10_dynamo.onnx");
  SKIP_WITHOUT_SHARED(Mobile);
  SKIP_WITHOUT_SHARED(Squeeze);
  SKIP_WITHOUT_SHARED(Resnet);
  // fp16 plans run their convolutions NHWC with KRSC filters.
  for (Precision P : {Precision::F32, Precision::F16}) {
    SCOPED_TRACE(precisionName(P).str());
    expectAllMatch({Mobile, {{"N", 1}}, P}, 50);
    expectAllMatch({Resnet, {}, P}, 10);
  }
  expectAllMatch({Squeeze, {}, Precision::F32}, 30);
  // Unfused: every op its own kernel or library call.
  Model Unfused{Mobile, {{"N", 1}}, Precision::F16};
  Unfused.NoFusion = true;
  expectAllMatch(Unfused, 100);
}

TEST(EmulatedPlan, BertMiniDynamo) {
  SKIP_WITHOUT_EMULATOR();
  std::string Path = sharedModel("bert_mini_dynamo.onnx");
  SKIP_WITHOUT_SHARED(Path);
  for (Precision P : {Precision::F32, Precision::BF16}) {
    SCOPED_TRACE(precisionName(P).str());
    expectAllMatch({Path, {}, P}, 8);
  }
}

// Negative twin: a kernel made wrong on purpose is caught, and it is the
// only group that fails.
TEST(EmulatedPlan, PerturbedGroupIsTheOnlyFailure) {
  SKIP_WITHOUT_EMULATOR();
  Model M{testData("fusion_chain.onnx"), {}, Precision::F32};
  Outcome Clean = emulatePlan(M);
  ASSERT_TRUE(Clean.Failed.empty());
  int64_t Target = -1;
  for (int64_t Id : Clean.EmulatedIds)
    if (Id >= 0)
      Target = Id;
  ASSERT_GE(Target, 0) << "no fused group was emulated";
  Outcome Bad = emulatePlan(M, Target);
  // The perturbed group fails, and what it feeds into the model's outputs
  // with it; every other group, given the reference's operands, passes.
  std::vector<std::string> Groups;
  for (const auto &[Key, Why] : Bad.Failed)
    if (!llvm::StringRef(Key).startswith("output "))
      Groups.push_back(Key);
  ASSERT_EQ(Groups.size(), 1u);
  EXPECT_NE(Groups[0].find(" " + std::to_string(Target) + " "),
            std::string::npos)
      << Groups[0];
}

// Every single-op model of the ONNX node suite the GPU path can plan: each
// op's kernel (elementwise, reductions, pools, resize, gather/scatter,
// top-k, cumsum, ...) on the reference's random inputs.
TEST(EmulatedPlan, OnnxNodeSuite) {
  SKIP_WITHOUT_EMULATOR();
  const char *Dir = std::getenv("SOLDER_SHARED_DIR");
  std::string Suite =
      std::string(Dir && *Dir ? Dir : SOLDER_SHARED_DIR) + "/onnx-tests/node";
  if (!llvm::sys::fs::is_directory(Suite))
    GTEST_SKIP() << "../shared/onnx-tests/node is not here";
  std::vector<std::string> Models;
  std::error_code EC;
  for (llvm::sys::fs::directory_iterator It(Suite, EC), End; It != End && !EC;
       It.increment(EC))
    if (llvm::sys::fs::exists(It->path() + "/model.onnx"))
      Models.push_back(It->path() + "/model.onnx");
  std::sort(Models.begin(), Models.end());
  unsigned Emulated = 0, Planned = 0, Library = 0, Ptx = 0;
  bool Verbose = std::getenv("SOLDER_EMULATOR_VERBOSE") != nullptr;
  for (const std::string &Path : Models) {
    if (Verbose)
      std::cerr << Path << "\n";
    Model M{Path, {}, Precision::F32};
    M.Lenient = true;
    Outcome O = emulatePlan(M);
    if (!O.NotBuilt.empty())
      continue;
    ++Planned;
    Emulated += O.Emulated;
    Library += O.Library;
    Ptx += O.Ptx;
    for (const auto &[Group, Why] : O.Failed)
      ADD_FAILURE() << Path << ": group " << Group << ": " << Why;
  }
  std::cout << Models.size() << " node tests, " << Planned << " planned; "
            << Emulated << " groups run, " << Library
            << " with a library call, " << Ptx
            << " from the reference (inline PTX)\n";
  EXPECT_GT(Emulated, 200u);
}

/// Runs the plan of the graph Text (`$T` standing for Type) and expects
/// Groups groups, all computed here, all matching.
void expectTextMatches(std::string Text, const std::string &Type, Model M,
                       unsigned Groups) {
  for (size_t At; (At = Text.find("$T")) != std::string::npos;)
    Text.replace(At, 2, Type);
  SCOPED_TRACE(Text);
  auto G = parseGraph(Text);
  ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
  M.Path = Text.substr(0, Text.find('{'));
  Outcome O = emulateGraph(**G, M, -1);
  EXPECT_EQ(O.Emulated, Groups);
  EXPECT_EQ(O.Ptx, 0u);
  for (const auto &[Group, Why] : O.Failed)
    ADD_FAILURE() << "group " << Group << ": " << Why;
}

// Clip with lo > hi gives hi everywhere (ONNX); the generated kernel gave
// lo below lo until the emulator's node-suite run showed it. Its twin has
// ordinary bounds.
TEST(EmulatedPlan, ClipBoundsAsOnnxDefinesThem) {
  SKIP_WITHOUT_EMULATOR();
  auto Text = [](const char *Lo, const char *Hi) {
    return std::string("graph \"clip\" opset 21 {\n"
                       "  input %x : f32[300]\n"
                       "  const %lo : f32[] = [") +
           Lo + "]\n  const %hi : f32[] = [" + Hi +
           "]\n"
           "  %y = Clip(%x, %lo, %hi) : f32[300]\n"
           "  output %y\n}\n";
  };
  expectTextMatches(Text("0.5", "-0.5"), "", Model(), 1); // lo > hi
  expectTextMatches(Text("-0.5", "0.5"), "", Model(), 1); // lo < hi
}

// The generated tensor-core GEMM with bias, residual and a LayerNorm over
// rows of 768, whose blocks share row statistics (through global memory,
// the TMA loop's blocks fitting one wave, or across a cluster); f16 and
// bf16, and bert_mini's matmuls.
TEST(EmulatedPlan, GeneratedGemmsWithClusterLayerNorm) {
  SKIP_WITHOUT_EMULATOR();
  const char *Text =
      "graph \"gemm_ln\" opset 21 {\n"
      "  input %x : $T[70,64]\n"
      "  input %w : $T[64,768]\n"
      "  input %b : $T[768]\n"
      "  input %r : $T[70,768]\n"
      "  input %gamma : $T[768]\n"
      "  input %beta : $T[768]\n"
      "  %m = MatMul(%x, %w) : $T[70,768]\n"
      "  %mb = Add(%m, %b) : $T[70,768]\n"
      "  %s = Add(%mb, %r) : $T[70,768]\n"
      "  %y = LayerNormalization(%s, %gamma, %beta) {axis = -1, epsilon = "
      "1e-5} : $T[70,768]\n"
      "  output %y\n}\n";
  for (Precision P : {Precision::F16, Precision::BF16}) {
    Model M;
    M.Prec = P;
    M.Gemm = GemmKernels::Generated;
    expectTextMatches(Text, P == Precision::F16 ? "f16" : "bf16", M, 1);
  }
  std::string Path = sharedModel("bert_mini_opset14.onnx");
  SKIP_WITHOUT_SHARED(Path);
  Model Bert{Path, {{"B", 2}, {"S", 16}}, Precision::F16};
  Bert.Gemm = GemmKernels::Generated;
  expectAllMatch(Bert, 10);
  // 128 tokens: the matmuls take the TMA loop, whose kernels run here
  // with the plan's tensor maps; those with a LayerNorm are cooperative
  // kernels keeping counters in the plan's scratch.
  Model Tma{Path, {{"B", 2}, {"S", 64}}, Precision::F16};
  Tma.Gemm = GemmKernels::Generated;
  Outcome O = expectAllMatch(Tma, 10);
  EXPECT_GT(O.TmaKernels, 0u);
  EXPECT_EQ(O.Cooperative, 4u) << "two LayerNorms a layer, two layers";
  EXPECT_GT(O.ScratchBytes, 0u);
  EXPECT_EQ(O.Ptx, 0u);
  // Negative twin: with the LayerNorms split off (tuning's chain), no
  // kernel waits for another block.
  Tma.SplitNorm = true;
  EXPECT_EQ(expectAllMatch(Tma, 10).Cooperative, 0u);
}

TEST(EmulatedPlan, DependentTmaGemmsFetchWeightsBeforeWaiting) {
  SKIP_WITHOUT_EMULATOR();
  // As dependent launches, the TMA GEMMs fetch their constant B for the
  // first stages before griddepcontrol.wait, then A: the stages' barriers
  // must still complete with both, so every group matches as before.
  std::string Path = sharedModel("bert_mini_opset14.onnx");
  SKIP_WITHOUT_SHARED(Path);
  Model Tma{Path, {{"B", 2}, {"S", 64}}, Precision::F16};
  Tma.Gemm = GemmKernels::Generated;
  Tma.DependentLaunch = true;
  Outcome O = expectAllMatch(Tma, 10);
  EXPECT_GT(O.TmaKernels, 0u);
  EXPECT_EQ(O.PrefetchKernels, O.TmaKernels);
  EXPECT_EQ(O.Ptx, 0u);
  // Negative twin: launched in order, no kernel fetches ahead.
  Tma.DependentLaunch = false;
  EXPECT_EQ(expectAllMatch(Tma, 10).PrefetchKernels, 0u);
}

TEST(EmulatedPlan, SplitNormGroupsRunAsGemmThenRowKernel) {
  SKIP_WITHOUT_EMULATOR();
  // Tuning's chain: every matmul group a generated GEMM, those with a
  // LayerNorm split into the GEMM (storing the normalization's input)
  // and a row kernel, all launched as dependents. Every group matches,
  // and each split group runs as two kernels.
  std::string Path = sharedModel("bert_mini_opset14.onnx");
  SKIP_WITHOUT_SHARED(Path);
  for (int64_t S : {16, 64}) {
    Model M{Path, {{"B", 2}, {"S", S}}, Precision::F16};
    M.Gemm = GemmKernels::Generated;
    M.SplitNorm = true;
    M.DependentLaunch = true;
    Outcome O = expectAllMatch(M, 10);
    EXPECT_EQ(O.SplitGroups, 4u) << "two LayerNorms a layer, two layers";
    EXPECT_EQ(O.Library, 0u);
    EXPECT_EQ(O.Ptx, 0u);
  }
}

TEST(EmulatedPlan, DeferredNormsComputedByTheGemms) {
  SKIP_WITHOUT_EMULATOR();
  // --defer-norms: every LayerNorm but the last hands its matmul and its
  // residual add its input and row statistics. With generated GEMMs the
  // GEMM reading the input as A computes the statistics from its stages
  // (the LayerNorm runs no kernel), checked as that group's results; its
  // readers downstream (the residual's correction) take what it stored.
  // The embeddings' LayerNorm keeps its group (Gather and Adds before it),
  // which computes the statistics. Every group matches.
  std::string Path = sharedModel("bert_mini_opset14.onnx");
  SKIP_WITHOUT_SHARED(Path);
  Model M{Path, {{"B", 2}, {"S", 64}}, Precision::F16};
  M.Gemm = GemmKernels::Generated;
  M.DeferNorms = true;
  M.DependentLaunch = true;
  Outcome O = expectAllMatch(M, 10);
  EXPECT_EQ(O.StatsKernels, 3u) << "FFN-in of two layers, QKV of the second";
  // The residual's correction in the copy-out where the epilogue is staged
  // (the output projections; not FFN-out, whose K is split).
  EXPECT_GE(O.StagedCorrections, 1u);
  EXPECT_EQ(O.Library, 0u);
  EXPECT_EQ(O.Ptx, 0u);
  // Negative twin: with library GEMMs the statistics run as their own
  // kernels (and still match).
  M.Gemm = GemmKernels::Library;
  Outcome L = expectAllMatch(M, 10);
  EXPECT_EQ(L.StatsKernels, 0u);
  // The dynamo export (2 x 32: 64 rows, which the mma.sync loop takes):
  // deferred too, every statistic its own kernel, every group matching.
  std::string Dynamo = sharedModel("bert_mini_dynamo.onnx");
  if (!Dynamo.empty()) {
    Model D{Dynamo, {}, Precision::F16};
    D.Gemm = GemmKernels::Generated;
    D.DeferNorms = true;
    EXPECT_EQ(expectAllMatch(D, 10).StatsKernels, 0u);
  }
}

// Forced loops of the generated GEMM (the wgmma loop with its tiles, the
// mma.sync loop with K split over a cluster), as
// GpuRuntimeTest.GemmVariantsMatchReference forces them, each kernel run
// alone on the group's operands (outputs poisoned first) against the
// reference: every case of tests/GemmGroupGraph.h, f16 and bf16. The
// wgmma cases also pass on an H100; here they check the shim's reading of
// the PTX manual's layouts as much as the kernels.
TEST(EmulatedKernel, GemmVariantsMatchReference) {
  SKIP_WITHOUT_EMULATOR();
  // Kernels run here, and those of them fed by TMA (tensor maps) or with
  // a producer warpgroup (mbarriers).
  unsigned Ran = 0, Tma = 0, Specialized = 0, Prefetching = 0, GridNorms = 0;
  for (const test::GemmVariantCase &C : test::gemmVariantCases())
    for (const char *T : {"f16", "bf16"})
      for (bool Dependent : {false, true}) {
        // As a dependent launch only the TMA loop changes (its producer
        // fetches B's first stages before griddepcontrol.wait, persistent,
        // split and staged alike): those cases again, in f16.
        if (Dependent && (!C.V.Tma || std::string(T) != "f16"))
          continue;
        std::string Text =
            test::gemmGroupGraph(T, C.Lead, C.M, C.N, C.K, C.Epi, C.TransB);
        SCOPED_TRACE(C.name() + " " + T + (Dependent ? " dependent" : "") +
                     "\n" + Text);
        auto G = parseGraph(Text);
        ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
        std::vector<Tensor> In;
        RandomGenerator Gen(21);
        for (const Value *X : (*G)->inputs())
          In.push_back(
              makeRandomTensor(X->dtype(), X->type().staticDims(), {}, Gen));
        auto Ref = runReference(**G, In);
        ASSERT_TRUE(bool(Ref)) << llvm::toString(Ref.takeError());
        auto Copy = parseGraph(Text);
        ASSERT_TRUE(bool(Copy));
        PipelineOptions PO;
        PO.TargetGpu = true;
        PO.Prec = std::string(T) == "f16" ? Precision::F16 : Precision::BF16;
        ASSERT_FALSE(bool(runPipeline(**Copy, PO)));
        const Node *Group = nullptr;
        for (const auto &N : (*Copy)->nodes())
          if (isFusedGroup(*N) && groupInfo(*N).Kind == GroupKind::Contraction)
            Group = N.get();
        ASSERT_TRUE(Group);
        CodegenOptions O;
        O.SmVersion = 90;
        O.DependentLaunch = Dependent;
        KernelNamer Names(**Copy);
        auto K = codegen::emitGeneratedGemmVariant(*Group, O, Names, &C.V);
        ASSERT_TRUE(bool(K)) << llvm::toString(K.takeError());
        if (Dependent) {
          EXPECT_NE(K->Summary.find("B fetched before the previous grid ends"),
                    std::string::npos)
              << K->Summary;
          ++Prefetching;
        }
        auto Kernels =
            emu::compileKernels({{K->Name, K->Source}}, emulatorCacheDir());
        ASSERT_TRUE(bool(Kernels)) << llvm::toString(Kernels.takeError());
        // Results poisoned (NaN in f16 and bf16); operands from the inputs
        // by name or the folded constants.
        std::vector<std::vector<unsigned char>> Buffers;
        auto Bytes = [](const Value *X) {
          return size_t(X->type().numElements()) * dtypeSize(X->dtype());
        };
        for (const Value *X : K->Outputs)
          Buffers.emplace_back(Bytes(X), 0xFF);
        for (const Value *X : K->Inputs) {
          const Tensor *Host = X->constant();
          for (size_t I = 0; I < (*G)->inputs().size() && !Host; ++I)
            if ((*G)->inputs()[I]->name() == X->name())
              Host = &In[I];
          ASSERT_TRUE(Host)
              << X->name() << " is neither an input nor a constant";
          ASSERT_EQ(Host->byteSize(), Bytes(X)) << X->name();
          auto *P = static_cast<const unsigned char *>(Host->rawData());
          Buffers.emplace_back(P, P + Bytes(X));
        }
        std::vector<void *> Args;
        for (auto &B : Buffers)
          Args.push_back(B.data());
        // Scratch (row statistics through global memory): zero before,
        // and its counters zero again after.
        std::vector<unsigned> Scratch(K->ScratchBytes / 4, 0u);
        if (K->ScratchBytes)
          Args.push_back(Scratch.data());
        EXPECT_EQ(K->Cooperative, C.V.GridNorm);
        std::vector<EmuTensorMap> Maps;
        for (const KernelTensorMap &T : K->TensorMaps)
          Maps.emplace_back(T, Buffers[K->Outputs.size() + T.Input].data());
        for (EmuTensorMap &M : Maps)
          Args.push_back(M.Bytes);
        llvm::Error E = (*Kernels)[0]->launch(K->Grid, K->Block,
                                              K->DynamicSharedBytes, Args);
        ASSERT_FALSE(bool(E)) << llvm::toString(std::move(E));
        if (K->ScratchBytes) {
          ++GridNorms;
          // Two a row of tiles (along x, or y when launched together).
          for (unsigned I = 0; I < 2 * std::max(K->Grid[0], K->Grid[1]); ++I)
            EXPECT_EQ(Scratch[I], 0u) << "counter " << I << " not reset";
        }
        ++Ran;
        Tma += !K->TensorMaps.empty();
        Specialized += C.V.Specialized;
        // Negative twin, once: the first TMA kernel given maps that end
        // after 8 columns of each operand must get a different product.
        std::vector<unsigned char> Cut;
        if (Tma == 1 && !K->TensorMaps.empty()) {
          std::vector<void *> Short(Args.begin(),
                                    Args.begin() + Buffers.size());
          std::vector<EmuTensorMap> ShortMaps;
          for (const KernelTensorMap &T : K->TensorMaps) {
            TensorMapShape S = T;
            S.Dims[0] = std::min<int64_t>(S.Dims[0], 8);
            ShortMaps.emplace_back(S,
                                   Buffers[K->Outputs.size() + T.Input].data());
          }
          for (EmuTensorMap &M : ShortMaps)
            Short.push_back(M.Bytes);
          Cut.assign(Buffers[0].size(), 0xFF);
          Short[0] = Cut.data();
          llvm::Error E2 = (*Kernels)[0]->launch(K->Grid, K->Block,
                                                 K->DynamicSharedBytes, Short);
          ASSERT_FALSE(bool(E2)) << llvm::toString(std::move(E2));
          EXPECT_NE(Cut, Buffers[0]) << "the tensor maps are not read";
        }
        for (size_t J = 0; J < K->Outputs.size(); ++J) {
          const Value *X = K->Outputs[J];
          Tensor Got = Tensor::copyOf(X->dtype(), X->type().staticDims(),
                                      Buffers[J].data());
          bool Found = false;
          for (size_t I = 0; I < (*G)->outputs().size(); ++I)
            if ((*G)->outputs()[I]->name() == X->name()) {
              Found = true;
              std::string D =
                  compareValue(Got, (*Ref)[I], tolerance(X->dtype(), PO.Prec));
              EXPECT_TRUE(D.empty())
                  << X->name() << ", " << K->Summary << ": " << D;
            }
          EXPECT_TRUE(Found) << X->name() << " is no graph output";
        }
      }
  std::cout << Ran << " GEMM kernels run, " << Specialized
            << " warp-specialized, " << Tma << " fed by TMA, " << Prefetching
            << " as dependent launches, " << GridNorms
            << " with row statistics through global memory\n";
  EXPECT_GT(GridNorms, 0u);
  EXPECT_GT(Specialized, 0u);
  EXPECT_GT(Tma, 0u);
  EXPECT_GT(Prefetching, 0u);
}

namespace {

/// A random graph for the fusion passes: a chain of elementwise ops,
/// broadcasts against extra inputs, reductions, softmax, LayerNorm,
/// transposes, slices (with steps), concats, reshapes and where-selects
/// over a rank-2 to rank-4 tensor, with an intermediate value
/// kept as a second output now and then (multi-output groups, values used
/// outside their group).
std::string randomFusionGraph(uint64_t Seed) {
  RandomGenerator Gen(Seed);
  auto Pick = [&](uint64_t N) { return Gen.next() % N; };
  auto Shape = [](const std::vector<int64_t> &D) {
    std::string S = "f32[";
    for (size_t I = 0; I < D.size(); ++I)
      S += (I ? "," : "") + std::to_string(D[I]);
    return S + "]";
  };
  auto Ints = [](const std::vector<int64_t> &V) {
    std::string S = "[";
    for (size_t I = 0; I < V.size(); ++I)
      S += (I ? ", " : "") + std::to_string(V[I]);
    return S + "]";
  };
  const int64_t Sizes[] = {1, 2, 3, 4, 5, 7, 8, 16, 17, 32, 33, 64};
  std::vector<int64_t> D(2 + Pick(3));
  int64_t Elems = 1;
  for (int64_t &X : D) {
    do
      X = Sizes[Pick(12)];
    while (Elems * X > 8192);
    Elems *= X;
  }
  std::string Inputs = "  input %x : " + Shape(D) + "\n", Body, Outputs;
  std::string Cur = "%x";
  unsigned Next = 0, Extra = 0;
  auto Fresh = [&] { return "%v" + std::to_string(Next++); };
  auto NewInput = [&](const std::vector<int64_t> &S) {
    std::string N = "%in" + std::to_string(Extra++);
    Inputs += "  input " + N + " : " + Shape(S) + "\n";
    return N;
  };
  unsigned Steps = 3 + unsigned(Pick(8));
  for (unsigned Step = 0; Step < Steps; ++Step) {
    std::string V = Fresh();
    switch (Pick(13)) {
    case 0:
    case 1: { // unary
      const char *Ops[] = {"Relu", "Sigmoid", "Tanh",     "Neg",
                           "Abs",  "Erf",     "Softplus", "Exp"};
      const char *Op = Ops[Pick(8)];
      if (std::string(Op) == "Exp") { // keep it finite: exp(tanh(x))
        std::string T = Fresh();
        Body += "  " + T + " = Tanh(" + Cur + ") : " + Shape(D) + "\n";
        Cur = T;
      }
      Body += "  " + V + " = " + Op + "(" + Cur + ") : " + Shape(D) + "\n";
      break;
    }
    case 2:
    case 3: { // broadcast binary against a new input
      std::vector<int64_t> B = D;
      for (int64_t &X : B)
        if (Pick(2))
          X = 1;
      while (B.size() > 1 && Pick(3) == 0)
        B.erase(B.begin()); // fewer leading dims
      const char *Ops[] = {"Add", "Sub", "Mul", "Max", "Min"};
      std::string In = NewInput(B);
      bool Swap = Pick(2);
      Body += "  " + V + " = " + Ops[Pick(5)] + "(" + (Swap ? In : Cur) + ", " +
              (Swap ? Cur : In) + ") : " + Shape(D) + "\n";
      break;
    }
    case 4: { // reduction over some axes
      std::vector<int64_t> Axes, R;
      for (size_t I = 0; I < D.size(); ++I)
        if (Pick(2))
          Axes.push_back(int64_t(I));
      if (Axes.empty())
        Axes.push_back(int64_t(D.size()) - 1);
      bool Keep = Pick(2) || Axes.size() == D.size();
      for (size_t I = 0; I < D.size(); ++I) {
        bool Reduced =
            std::find(Axes.begin(), Axes.end(), int64_t(I)) != Axes.end();
        if (!Reduced)
          R.push_back(D[I]);
        else if (Keep)
          R.push_back(1);
      }
      const char *Ops[] = {"ReduceSum", "ReduceMean", "ReduceMax"};
      std::string A = "%axes" + std::to_string(Next);
      Inputs += "  const " + A + " : i64[" + std::to_string(Axes.size()) +
                "] = " + Ints(Axes) + "\n";
      Body += "  " + V + " = " + Ops[Pick(3)] + "(" + Cur + ", " + A +
              ") {keepdims = " + (Keep ? "1" : "0") + "} : " + Shape(R) + "\n";
      D = R;
      break;
    }
    case 5: // softmax over the last axis
      Body +=
          "  " + V + " = Softmax(" + Cur + ") {axis = -1} : " + Shape(D) + "\n";
      break;
    case 6: { // LayerNorm over the last axis
      std::string G = NewInput({D.back()}), B = NewInput({D.back()});
      Body += "  " + V + " = LayerNormalization(" + Cur + ", " + G + ", " + B +
              ") {axis = -1, epsilon = 1e-05} : " + Shape(D) + "\n";
      break;
    }
    case 7: { // transpose
      std::vector<int64_t> Perm(D.size()), R(D.size());
      for (size_t I = 0; I < Perm.size(); ++I)
        Perm[I] = int64_t(I);
      for (size_t I = Perm.size(); I > 1; --I)
        std::swap(Perm[I - 1], Perm[Pick(I)]);
      for (size_t I = 0; I < Perm.size(); ++I)
        R[I] = D[size_t(Perm[I])];
      Body += "  " + V + " = Transpose(" + Cur + ") {perm = " + Ints(Perm) +
              "} : " + Shape(R) + "\n";
      D = R;
      break;
    }
    case 8: { // slice a range of one axis, with a step now and then
      size_t Ax = size_t(Pick(D.size()));
      if (D[Ax] < 2) {
        Body += "  " + V + " = Neg(" + Cur + ") : " + Shape(D) + "\n";
        break;
      }
      int64_t Start = int64_t(Pick(uint64_t(D[Ax] / 2))),
              Step = 1 + int64_t(Pick(2));
      int64_t End = Start + 1 + int64_t(Pick(uint64_t(D[Ax] - Start)));
      std::vector<int64_t> R = D;
      R[Ax] = (End - Start + Step - 1) / Step;
      std::string P = std::to_string(Next);
      Inputs += "  const %st" + P + " : i64[1] = [" + std::to_string(Start) +
                "]\n  const %en" + P + " : i64[1] = [" + std::to_string(End) +
                "]\n  const %ax" + P + " : i64[1] = [" + std::to_string(Ax) +
                "]\n  const %sp" + P + " : i64[1] = [" + std::to_string(Step) +
                "]\n";
      Body += "  " + V + " = Slice(" + Cur + ", %st" + P + ", %en" + P +
              ", %ax" + P + ", %sp" + P + ") : " + Shape(R) + "\n";
      D = R;
      break;
    }
    case 9: { // concat with a new input along one axis
      size_t Ax = size_t(Pick(D.size()));
      std::vector<int64_t> B = D, R = D;
      B[Ax] = 1 + int64_t(Pick(3));
      R[Ax] += B[Ax];
      std::string In = NewInput(B);
      Body += "  " + V + " = Concat(" + Cur + ", " + In +
              ") {axis = " + std::to_string(Ax) + "} : " + Shape(R) + "\n";
      D = R;
      break;
    }
    case 10: { // reshape: the last two dims merged
      if (D.size() < 2) {
        Body += "  " + V + " = Abs(" + Cur + ") : " + Shape(D) + "\n";
        break;
      }
      std::vector<int64_t> R(D.begin(), D.end() - 2);
      R.push_back(D[D.size() - 2] * D.back());
      std::string P = "%shape" + std::to_string(Next);
      Inputs += "  const " + P + " : i64[" + std::to_string(R.size()) +
                "] = " + Ints(R) + "\n";
      Body +=
          "  " + V + " = Reshape(" + Cur + ", " + P + ") : " + Shape(R) + "\n";
      D = R;
      break;
    }
    case 11: { // where(x > a, x, b) with broadcast a and b
      std::vector<int64_t> B = D;
      for (int64_t &X : B)
        if (Pick(2))
          X = 1;
      std::string A = NewInput(B), Bv = NewInput(D), C = Fresh();
      std::string BoolShape = Shape(D);
      BoolShape.replace(0, 3, "bool");
      Body +=
          "  " + C + " = Greater(" + Cur + ", " + A + ") : " + BoolShape + "\n";
      Body += "  " + V + " = Where(" + C + ", " + Cur + ", " + Bv +
              ") : " + Shape(D) + "\n";
      break;
    }
    default: // keep the current value as an output too
      if (Cur != "%x" && Outputs.find(Cur + "\n") == std::string::npos)
        Outputs += "  output " + Cur + "\n";
      Body += "  " + V + " = Relu(" + Cur + ") : " + Shape(D) + "\n";
      break;
    }
    Cur = V;
  }
  return "graph \"random" + std::to_string(Seed) + "\" opset 18 {\n" + Inputs +
         Body + Outputs + "  output " + Cur + "\n}\n";
}

} // namespace

// Random graphs through the fusion passes, planned for sm_90 and run in
// the emulator against the reference, fp32 and fp16: what loop, reduction
// and epilogue fusion form from chains no exporter wrote.
TEST(EmulatedPlan, RandomFusionGraphs) {
  SKIP_WITHOUT_EMULATOR();
  unsigned Graphs = 0, Groups = 0;
  for (uint64_t Seed = 1; Seed <= 60; ++Seed) {
    std::string Text = randomFusionGraph(Seed);
    for (Precision P : {Precision::F32, Precision::F16}) {
      SCOPED_TRACE(Text);
      auto G = parseGraph(Text);
      ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
      Model M;
      M.Path = "random " + std::to_string(Seed);
      M.Prec = P;
      Outcome O = emulateGraph(**G, M, -1);
      if (std::getenv("SOLDER_EMULATOR_VERBOSE"))
        std::cerr << Text << "-> " << O.Emulated << " groups ("
                  << precisionName(P).str() << ")\n";
      ++Graphs;
      Groups += O.Emulated;
      for (const auto &[Group, Why] : O.Failed)
        ADD_FAILURE() << precisionName(P).str() << " group " << Group << ": "
                      << Why;
    }
  }
  std::cout << Graphs << " random graph plans, " << Groups << " groups run\n";
  EXPECT_GT(Groups, Graphs);
}
