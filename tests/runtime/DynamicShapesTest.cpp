//===- DynamicShapesTest.cpp - One model for a range of input shapes ------===//
//
// CompileOptions::InputRanges: the reference backend (no GPU) runs every
// shape in the ranges and matches a static compile of that shape; shapes
// outside the ranges, dims of one symbol that disagree, and ranges that do
// not fit the model are refused with the input and dim named; variants are
// kept in an LRU. On a GPU the same, plus one context switching shapes
// (graphs kept per shape) against the reference, with weights shared.
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestUtils.h"
#include "frontend/OnnxImporter.h"
#include "runtime/cuda/DynamicPlanFile.h"
#include "runtime/cuda/Plan.h"
#include "runtime/cuda/ShapeVariants.h"
#include "runtime/reference/ReferenceExecutor.h"
#include "solder/Solder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>
#if SOLDER_HAVE_CUDA
#include "runtime/cuda/CudaSupport.h"
#endif

using namespace solder;
using namespace solder::test;

namespace {

std::string dataPath(const char *File) {
  return std::string(SOLDER_TEST_DATA_DIR) + "/" + File;
}

std::string errorText(llvm::Error E) {
  return E ? llvm::toString(std::move(E)) : "no error";
}

Tensor randomTensor(DType Elem, std::vector<int64_t> Dims, unsigned Seed,
                    bool Mask = false) {
  std::mt19937 Rng(Seed);
  Tensor T(Elem, Dims);
  for (int64_t I = 0; I < T.numElements(); ++I)
    T.setDouble(I, Mask ? double(Rng() % 2)
                        : std::uniform_real_distribution<double>(-1, 1)(Rng));
  return T;
}

/// The reference executor on the imported model at the inputs' shapes.
std::vector<Tensor> referenceAt(const std::string &Path,
                                const std::vector<std::string> &Names,
                                const std::vector<Tensor> &In) {
  ImportOptions IO;
  for (size_t I = 0; I < In.size(); ++I)
    IO.InputShapes[Names[I]] =
        std::vector<int64_t>(In[I].dims().begin(), In[I].dims().end());
  auto G = importOnnxFile(Path, IO);
  EXPECT_TRUE(bool(G)) << llvm::toString(G.takeError());
  if (!G)
    return {};
  auto Ref = runReference(**G, In);
  EXPECT_TRUE(bool(Ref)) << llvm::toString(Ref.takeError());
  return Ref ? std::move(*Ref) : std::vector<Tensor>();
}

double relativeError(const Tensor &A, const Tensor &B) {
  if (A.dtype() != B.dtype() || A.dims() != B.dims())
    return INFINITY;
  double MaxDiff = 0, MaxRef = 0;
  for (int64_t I = 0; I < A.numElements(); ++I) {
    MaxDiff = std::max(MaxDiff, std::fabs(A.getDouble(I) - B.getDouble(I)));
    MaxRef = std::max(MaxRef, std::fabs(B.getDouble(I)));
  }
  return MaxRef > 0 ? MaxDiff / MaxRef : MaxDiff;
}

CompileOptions mlpRanges(ExecutionBackend Backend) {
  CompileOptions CO;
  CO.Backend = Backend;
  CO.CacheDir = testCacheDir();
  CO.InputRanges["x"] = {{1, 16}, {4, 4}};
  return CO;
}

} // namespace

TEST(DynamicShapesTest, ReferenceServesEveryShapeInTheRange) {
  auto M = CompiledModel::compileFile(dataPath("tiny_mlp.onnx"),
                                      mlpRanges(ExecutionBackend::Reference));
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  EXPECT_TRUE((*M)->isDynamic());
  ASSERT_EQ((*M)->inputs().size(), 1u);
  EXPECT_EQ((*M)->inputs()[0].Dims, (std::vector<int64_t>{16, 4}));
  EXPECT_EQ((*M)->inputs()[0].Ranges, (std::vector<DimRange>{{1, 16}, {4, 4}}));
  EXPECT_EQ((*M)->outputs()[0].Dims, (std::vector<int64_t>{16, 3}));
  EXPECT_EQ((*M)->shapeVariantsCompiled(), 1u); // the max shape
  auto Ctx = (*M)->createContext();
  ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
  for (int64_t N : {1, 3, 16, 3}) {
    SCOPED_TRACE(N);
    std::vector<Tensor> In = {randomTensor(DType::F32, {N, 4}, unsigned(N))};
    auto Out = (*Ctx)->runHost(In);
    ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
    std::vector<Tensor> Want =
        referenceAt(dataPath("tiny_mlp.onnx"), {"x"}, In);
    ASSERT_EQ(Out->size(), Want.size());
    EXPECT_EQ((*Out)[0].dims().vec(), (std::vector<int64_t>{N, 3}));
    EXPECT_LE(relativeError((*Out)[0], Want[0]), 1e-6);
    auto OutDims = (*Ctx)->outputDims(0);
    ASSERT_TRUE(bool(OutDims)) << llvm::toString(OutDims.takeError());
    EXPECT_EQ(*OutDims, (std::vector<int64_t>{N, 3}));
  }
  // 1 and 3 were new; 16 was the max; the second 3 was kept.
  EXPECT_EQ((*M)->shapeVariantsCompiled(), 3u);
}

TEST(DynamicShapesTest, ShapesOutsideTheRangeAreRefused) {
  auto M = CompiledModel::compileFile(dataPath("tiny_mlp.onnx"),
                                      mlpRanges(ExecutionBackend::Reference));
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  auto Ctx = (*M)->createContext();
  ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
  std::string Msg = errorText((*Ctx)->setInputShape(0, {17, 4}));
  EXPECT_NE(Msg.find("input 'x' dim 0 is 17, outside the model's range "
                     "1..16"),
            std::string::npos)
      << Msg;
  Msg = errorText((*Ctx)->setInputShape(0, {2, 5}));
  EXPECT_NE(Msg.find("dim 1 is 5"), std::string::npos) << Msg;
  Msg = errorText((*Ctx)->setInputShape(0, {2}));
  EXPECT_NE(Msg.find("has rank 2"), std::string::npos) << Msg;
  auto Out = (*Ctx)->runHost({randomTensor(DType::F32, {20, 4}, 1)});
  ASSERT_FALSE(bool(Out));
  Msg = llvm::toString(Out.takeError());
  EXPECT_NE(Msg.find("outside the model's range"), std::string::npos) << Msg;
  // Its twin: the edges of the range are inside it.
  EXPECT_EQ(errorText((*Ctx)->setInputShape(0, {1, 4})), "no error");
  EXPECT_EQ(errorText((*Ctx)->setInputShape(0, {16, 4})), "no error");
  auto In = (*Ctx)->inputDims(0);
  ASSERT_TRUE(bool(In));
  EXPECT_EQ(*In, (std::vector<int64_t>{16, 4}));
}

TEST(DynamicShapesTest, BadRangesAreRefusedByName) {
  struct Case {
    const char *Input;
    std::vector<DimRange> Ranges;
    const char *Expect;
  };
  for (const Case &C : std::vector<Case>{
           {"nope", {{1, 2}, {4, 4}}, "the model has no such input"},
           {"x", {{1, 2}}, "has rank 2"},
           {"x", {{1, 2}, {3, 5}}, "dim 1: the dim is fixed to 4"},
           {"x", {{3, 2}, {4, 4}}, "is not a range of sizes"}}) {
    CompileOptions CO = mlpRanges(ExecutionBackend::Reference);
    CO.InputRanges.clear();
    CO.InputRanges[C.Input] = C.Ranges;
    auto M = CompiledModel::compileFile(dataPath("tiny_mlp.onnx"), CO);
    ASSERT_FALSE(bool(M)) << C.Expect;
    std::string Msg = llvm::toString(M.takeError());
    EXPECT_NE(Msg.find(C.Expect), std::string::npos) << Msg;
  }
  // Ranges need the model itself, not an imported graph.
  auto G = importOnnxFile(dataPath("tiny_mlp.onnx"), {});
  ASSERT_TRUE(bool(G));
  auto M = CompiledModel::compileGraph(std::move(*G),
                                       mlpRanges(ExecutionBackend::Reference));
  ASSERT_FALSE(bool(M));
  EXPECT_NE(llvm::toString(M.takeError()).find("need the ONNX model"),
            std::string::npos);
}

TEST(DynamicShapesTest, DimsOfOneSymbolAreTied) {
  // attention_block: qkv [B,6,72] and mask [B,1,1,6]; a range on qkv's B
  // gives mask's B the same range, and setting one sets the other.
  CompileOptions CO;
  CO.Backend = ExecutionBackend::Reference;
  CO.InputRanges["qkv"] = {{1, 4}, {6, 6}, {72, 72}};
  std::string Path = dataPath("attention_block.onnx");
  auto M = CompiledModel::compileFile(Path, CO);
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  ASSERT_EQ((*M)->inputs().size(), 2u);
  EXPECT_EQ((*M)->inputs()[1].Dims, (std::vector<int64_t>{4, 1, 1, 6}));
  EXPECT_EQ((*M)->inputs()[1].Ranges[0], (DimRange{1, 4}));
  auto Ctx = (*M)->createContext();
  ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
  ASSERT_EQ(errorText((*Ctx)->setInputShape(0, {2, 6, 72})), "no error");
  auto MaskDims = (*Ctx)->inputDims(1);
  ASSERT_TRUE(bool(MaskDims));
  EXPECT_EQ(*MaskDims, (std::vector<int64_t>{2, 1, 1, 6}));

  std::vector<Tensor> In = {randomTensor(DType::F32, {3, 6, 72}, 5),
                            randomTensor(DType::F32, {3, 1, 1, 6}, 6)};
  auto Out = (*Ctx)->runHost(In);
  ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
  std::vector<Tensor> Want = referenceAt(Path, {"qkv", "mask"}, In);
  ASSERT_EQ(Want.size(), 1u);
  EXPECT_LE(relativeError((*Out)[0], Want[0]), 1e-6);
  // Its negative twin: the two B dims disagree.
  auto Bad = (*Ctx)->runHost({randomTensor(DType::F32, {3, 6, 72}, 5),
                              randomTensor(DType::F32, {2, 1, 1, 6}, 6)});
  ASSERT_FALSE(bool(Bad));
  std::string Msg = llvm::toString(Bad.takeError());
  EXPECT_NE(Msg.find("same symbol as input 'qkv' dim 0"), std::string::npos)
      << Msg;
}

TEST(DynamicShapesTest, LeastRecentlyUsedVariantsAreDropped) {
  CompileOptions CO = mlpRanges(ExecutionBackend::Reference);
  CO.MaxShapeVariants = 2;
  auto M = CompiledModel::compileFile(dataPath("tiny_mlp.onnx"), CO);
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  for (int64_t N : {1, 2, 1, 3, 16, 1}) { // keeps {max, ...} in 2 slots
    auto V = (*M)->shapeVariant({{N, 4}});
    ASSERT_TRUE(bool(V)) << llvm::toString(V.takeError());
    EXPECT_EQ((*V)->inputs()[0].Dims, (std::vector<int64_t>{N, 4}));
    EXPECT_FALSE((*V)->isDynamic());
  }
  // max(1); 1, 2 new; 1 kept; 3 new (drops 2); 16 dropped earlier: new;
  // 1 dropped by 16's arrival: new.
  EXPECT_EQ((*M)->shapeVariantsCompiled(), 6u);
  auto Bad = (*M)->shapeVariant({{0, 4}});
  ASSERT_FALSE(bool(Bad));
  llvm::consumeError(Bad.takeError());
}

#if SOLDER_HAVE_CUDA
namespace {
/// K's text as the kernel cache sees it.
std::string withoutSummary(const PlanKernel &K) {
  return withoutSummaryComment(K.Source, K.Summary);
}

/// BERT-mini fp16 for the GPU (compiled here without one), input_ids and
/// attention_mask ranged over batch 1..4 and sequence 8..128.
CompileOptions bertMiniRanges() {
  CompileOptions CO;
  CO.Backend = ExecutionBackend::Cuda;
  CO.Prec = Precision::F16;
  CO.Arch = "sm_90";
  CO.CacheDir = testCacheDir();
  for (const char *In : {"input_ids", "attention_mask"})
    CO.InputRanges[In] = {{1, 4}, {8, 128}};
  return CO;
}
} // namespace

TEST(DynamicShapesTest, VariantsShareKernelsAndConvertedWeights) {
  // A dynamic model's variants at other batch sizes and sequence lengths
  // run the same kernel texts (lengths as parameters: their cubins come
  // from the cache), and their fp16 weights are the bytes the first
  // variant converted (ReducedWeightCache), not converted again.
  std::string Path = sharedDir() + "/models/bert_mini_opset14.onnx";
  if (!llvm::sys::fs::exists(Path))
    GTEST_SKIP() << "no shared models under " << sharedDir();
  auto SV = ShapeVariants::create(Path, "", bertMiniRanges());
  ASSERT_TRUE(bool(SV)) << llvm::toString(SV.takeError());
  auto A = (*SV)->get({{2, 64}, {2, 64}});
  ASSERT_TRUE(bool(A)) << llvm::toString(A.takeError());
  auto B = (*SV)->get({{3, 100}, {3, 100}});
  ASSERT_TRUE(bool(B)) << llvm::toString(B.takeError());
  const Plan &PA = (*A)->plan(), &PB = (*B)->plan();
  ASSERT_EQ(PA.Kernels.size(), PB.Kernels.size());
  ASSERT_GE(PA.Kernels.size(), 4u);
  for (size_t I = 0; I < PA.Kernels.size(); ++I)
    EXPECT_EQ(withoutSummary(PA.Kernels[I]), withoutSummary(PB.Kernels[I]))
        << PA.Kernels[I].Summary << "\nagainst\n"
        << PB.Kernels[I].Summary;
  std::set<const char *> Converted;
  for (const WeightBlob::Piece &W : PA.Weights.pieces())
    if (W.Bytes.size() >= 4096)
      Converted.insert(W.Bytes.data());
  size_t Shared = 0;
  for (const WeightBlob::Piece &W : PB.Weights.pieces())
    Shared += Converted.count(W.Bytes.data());
  // The word embeddings and each layer's packed Q/K/V, output, FFN-in and
  // FFN-out weights.
  EXPECT_GE(Shared, 9u);
}

TEST(DynamicShapesTest, StaticPlansBakeTheirLengths) {
  // Negative twin: static plans at those two shapes bake the sequence
  // length (measured faster), so some kernel texts differ.
  std::string Path = sharedDir() + "/models/bert_mini_opset14.onnx";
  if (!llvm::sys::fs::exists(Path))
    GTEST_SKIP() << "no shared models under " << sharedDir();
  std::vector<std::string> Texts[2];
  int64_t Shapes[2][2] = {{2, 64}, {3, 100}};
  for (int I = 0; I < 2; ++I) {
    CompileOptions CO = bertMiniRanges();
    CO.InputRanges.clear();
    for (const char *In : {"input_ids", "attention_mask"})
      CO.InputShapes[In] = {Shapes[I][0], Shapes[I][1]};
    auto M = CompiledModel::compileFile(Path, CO);
    ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
    for (const PlanKernel &K : (*M)->plan().Kernels)
      Texts[I].push_back(withoutSummary(K));
  }
  ASSERT_EQ(Texts[0].size(), Texts[1].size());
  EXPECT_NE(Texts[0], Texts[1]);
}

TEST(DynamicShapesTest, DynamicPlanFileRoundTripsAndRefusesCorruption) {
  // A dynamic model saves as one file (the model and options) and loads
  // back as the same dynamic model (no GPU needed: the max variant compiles
  // with NVRTC); a flipped byte or a truncated file is refused by the
  // checksum, and a static plan still loads as before.
  CompileOptions CO = mlpRanges(ExecutionBackend::Cuda);
  CO.Arch = "sm_90";
  CO.Prec = Precision::F16;
  // Who runs matmul, attention and convolution groups comes back too (each
  // variant is compiled with it).
  CO.Gemm = GemmKernels::Library;
  CO.Attention = AttentionKernels::Cudnn;
  CO.Conv = ConvEpilogues::Graph;
  auto M = CompiledModel::compileFile(dataPath("tiny_mlp.onnx"), CO);
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  llvm::SmallString<128> Dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("dynplan", Dir));
  std::string Path = (Dir + "/m.plan").str();
  ASSERT_EQ(errorText((*M)->savePlan(Path)), "no error");
  auto L = CompiledModel::loadPlan(Path);
  ASSERT_TRUE(bool(L)) << llvm::toString(L.takeError());
  EXPECT_TRUE((*L)->isDynamic());
  EXPECT_EQ((*L)->inputs()[0].Ranges, (*M)->inputs()[0].Ranges);
  EXPECT_EQ((*L)->outputs()[0].Dims, (*M)->outputs()[0].Dims);
  EXPECT_EQ((*L)->plan().Prec, Precision::F16);
  auto V = (*L)->shapeVariant({{5, 4}});
  ASSERT_TRUE(bool(V)) << llvm::toString(V.takeError());
  EXPECT_EQ((*V)->outputs()[0].Dims, (std::vector<int64_t>{5, 3}));

  auto Buf = llvm::MemoryBuffer::getFile(Path);
  ASSERT_TRUE(bool(Buf));
  std::string Bytes = (*Buf)->getBuffer().str();
  auto Dyn = deserializeDynamicPlan(Bytes);
  ASSERT_TRUE(bool(Dyn)) << llvm::toString(Dyn.takeError());
  EXPECT_EQ(Dyn->Opts.Gemm, GemmKernels::Library);
  EXPECT_EQ(Dyn->Opts.Attention, AttentionKernels::Cudnn);
  EXPECT_EQ(Dyn->Opts.Conv, ConvEpilogues::Graph);
  // The file (its model written in gathered batches, its size reserved
  // first) is the in-memory form's bytes.
  EXPECT_TRUE(Bytes == serializeDynamicPlan(*Dyn));
  for (bool Truncate : {false, true}) {
    std::string Bad = Bytes;
    if (Truncate)
      Bad.resize(Bad.size() / 2);
    else
      Bad[Bad.size() / 2] ^= 0x40;
    std::string BadPath = (Dir + "/bad.plan").str();
    {
      std::error_code EC;
      llvm::raw_fd_ostream OS(BadPath, EC);
      ASSERT_FALSE(EC);
      OS << Bad;
    }
    auto R = CompiledModel::loadPlan(BadPath);
    ASSERT_FALSE(bool(R)) << "accepted a corrupt dynamic plan";
    std::string Msg = llvm::toString(R.takeError());
    EXPECT_NE(Msg.find("dynamic plan: checksum mismatch"), std::string::npos)
        << Msg;
  }
  CompileOptions Static;
  Static.Arch = "sm_90";
  Static.CacheDir = testCacheDir();
  Static.SymbolSizes["N"] = 2;
  auto S = CompiledModel::compileFile(dataPath("tiny_mlp.onnx"), Static);
  ASSERT_TRUE(bool(S)) << llvm::toString(S.takeError());
  ASSERT_EQ(errorText((*S)->savePlan(Path)), "no error");
  auto SL = CompiledModel::loadPlan(Path);
  ASSERT_TRUE(bool(SL)) << llvm::toString(SL.takeError());
  EXPECT_FALSE((*SL)->isDynamic());
  llvm::sys::fs::remove_directories(Dir);
}

TEST(DynamicShapesTest, GpuContextSwitchesShapesAndMatchesTheReference) {
  if (llvm::Expected<int> Dev = requireDevice(); !Dev)
    GTEST_SKIP() << "GPU test skipped: " << llvm::toString(Dev.takeError());
  struct Case {
    std::string Path;
    std::vector<std::string> Names;
    CompileOptions CO;
    std::vector<std::vector<std::vector<int64_t>>> Shapes;
  };
  std::vector<Case> Cases;
  Cases.push_back({dataPath("tiny_mlp.onnx"),
                   {"x"},
                   mlpRanges(ExecutionBackend::Cuda),
                   {{{1, 4}}, {{7, 4}}, {{16, 4}}, {{7, 4}}, {{1, 4}}}});
  std::string Bert = sharedDir() + "/models/bert_mini_opset14.onnx";
  if (llvm::sys::fs::exists(Bert)) {
    CompileOptions CO;
    CO.CacheDir = testCacheDir();
    CO.InputRanges["input_ids"] = {{1, 4}, {1, 128}};
    Cases.push_back({Bert,
                     {"input_ids", "attention_mask"},
                     CO,
                     {{{1, 1}, {1, 1}},
                      {{2, 7}, {2, 7}},
                      {{4, 128}, {4, 128}},
                      {{3, 77}, {3, 77}},
                      {{1, 128}, {1, 128}},
                      {{2, 7}, {2, 7}}}});
  }
  for (Case &C : Cases) {
    SCOPED_TRACE(C.Path);
    auto M = CompiledModel::compileFile(C.Path, C.CO);
    ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
    auto Ctx = (*M)->createContext();
    ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
    for (size_t K = 0; K < C.Shapes.size(); ++K) {
      SCOPED_TRACE(K);
      std::vector<Tensor> In;
      for (size_t I = 0; I < C.Shapes[K].size(); ++I) {
        DType Elem = (*M)->inputs()[I].Elem;
        bool Ids = Elem == DType::I64 && C.Names[I] == "input_ids";
        Tensor T = randomTensor(Elem, C.Shapes[K][I], unsigned(K * 10 + I),
                                Elem == DType::I64 && !Ids);
        if (Ids)
          for (int64_t E = 0; E < T.numElements(); ++E)
            T.setDouble(E, double((E * 37 + K) % 1000));
        In.push_back(std::move(T));
      }
      std::vector<Tensor> Want = referenceAt(C.Path, C.Names, In);
      for (int Run = 0; Run < 2; ++Run) { // capture, then replay
        auto Out = (*Ctx)->runHost(In);
        ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
        ASSERT_EQ(Out->size(), Want.size());
        for (size_t O = 0; O < Out->size(); ++O)
          EXPECT_LE(relativeError((*Out)[O], Want[O]), 1e-4) << "output " << O;
      }
    }
    EXPECT_EQ((*Ctx)->cudaGraphFailure(), "");
    // Shared weights: the pool holds about one copy of them, not one per
    // shape.
    auto First = (*M)->shapeVariant(C.Shapes[0]);
    ASSERT_TRUE(bool(First)) << llvm::toString(First.takeError());
    EXPECT_LT(double((*M)->stats().WeightBytes),
              1.5 * double((*First)->stats().WeightBytes) + (1 << 20));
  }
}
#endif
