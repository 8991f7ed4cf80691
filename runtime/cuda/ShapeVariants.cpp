//===- ShapeVariants.cpp - Dynamic shapes as per-shape variants -----------===//
//
// See ShapeVariants.h for the design. Dims that share a symbol across
// inputs (input_ids and attention_mask both [batch, sequence]) are tied:
// setting one input's shape sets the tied dims of the others, and a shape
// where they disagree is refused.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/ShapeVariants.h"
#include "frontend/ModelSummary.h"
#include "frontend/OnnxImporter.h"
#include "ir/FileBytes.h"
#include "runtime/cuda/CudaSupport.h"
#include "runtime/cuda/MemoryPlanner.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/xxhash.h"
#include <cuda_runtime_api.h>

using namespace llvm;

namespace solder {

static Error dynError(const Twine &Msg) {
  return createStringError(inconvertibleErrorCode(), Msg);
}

static std::string dimsText(ArrayRef<int64_t> Dims) {
  return Dims.empty()
             ? std::string("scalar")
             : join(
                   map_range(Dims, [](int64_t D) { return std::to_string(D); }),
                   "x");
}

//===----------------------------------------------------------------------===//
// DeviceWeightPool
//===----------------------------------------------------------------------===//

DeviceWeightPool::~DeviceWeightPool() {
  std::lock_guard<std::mutex> Lock(RuntimeAccess::captureMutex());
  for (auto &E : Ptrs)
    cudaFree(E.second);
}

Expected<const void *>
DeviceWeightPool::get(StringRef Bytes, std::shared_ptr<const void> Owner) {
  std::pair<const char *, size_t> Place{Bytes.data(), Bytes.size()};
  if (Owner) {
    // Held owners keep these addresses from being reused for other bytes.
    std::lock_guard<std::mutex> Lock(Mu);
    auto It = Places.find(Place);
    if (It != Places.end())
      return It->second.Ptr;
  }
  // Two independent 64-bit hashes (the whole, and the halves combined)
  // plus the size: a collision would silently share wrong weights.
  size_t Half = Bytes.size() / 2;
  Key K{Bytes.size(), xxHash64(Bytes),
        xxHash64(Bytes.take_front(Half)) * 0x9E3779B97F4A7C15ULL ^
            xxHash64(Bytes.drop_front(Half))};
  std::lock_guard<std::mutex> Lock(Mu);
  auto It = Ptrs.find(K);
  if (It != Ptrs.end()) {
    if (Owner)
      Places.emplace(Place, Held{It->second, std::move(Owner)});
    return It->second;
  }
  // Padded to 256 bytes with zeros, as a piece of a plan's weights blob
  // is followed by zeros up to the next piece.
  void *Ptr = nullptr;
  uint64_t Padded = alignTo256(Bytes.size());
  SOLDER_CUDA_TRY(cudaMalloc(&Ptr, Padded),
                  "cudaMalloc of " + Twine(Bytes.size()) + " bytes of weights");
  cudaError_t R = cudaMemset(Ptr, 0, Padded);
  if (R == cudaSuccess)
    R = cudaMemcpy(Ptr, Bytes.data(), Bytes.size(), cudaMemcpyHostToDevice);
  if (R != cudaSuccess) {
    cudaFree(Ptr);
    return cudaError(R, "uploading weights");
  }
  Ptrs.emplace(K, Ptr);
  if (Owner)
    Places.emplace(Place, Held{Ptr, std::move(Owner)});
  Total += Bytes.size();
  return Ptr;
}

uint64_t DeviceWeightPool::bytes() const {
  std::lock_guard<std::mutex> Lock(Mu);
  return Total;
}

//===----------------------------------------------------------------------===//
// ShapeVariants
//===----------------------------------------------------------------------===//

namespace {
/// Per input and dim: its range and the (input, dim) whose value it takes
/// when a symbol ties them (itself otherwise).
struct DimSpec {
  DimRange Range;
  std::vector<std::pair<unsigned, unsigned>> Tied;
};
} // namespace

std::string ShapeVariants::key(ArrayRef<std::vector<int64_t>> Dims) {
  return join(
      map_range(Dims,
                [](const std::vector<int64_t> &D) { return dimsText(D); }),
      ",");
}

Expected<std::unique_ptr<ShapeVariants>>
ShapeVariants::create(std::string Path, std::string Bytes,
                      const CompileOptions &Opts) {
  Expected<ModelSummary> S = Path.empty() ? summarizeOnnxBytes(Bytes, "model")
                                          : summarizeOnnxFile(Path);
  if (!S)
    return S.takeError();
  std::string Names = join(
      map_range(S->Inputs, [](const ValueSummary &V) { return V.Name; }), ", ");
  for (const auto &E : Opts.InputRanges)
    if (none_of(S->Inputs,
                [&](const ValueSummary &V) { return V.Name == E.getKey(); }))
      return dynError("input range for '" + E.getKey() +
                      "': the model has no such input (inputs: " + Names + ")");

  auto SV = std::unique_ptr<ShapeVariants>(new ShapeVariants());
  if (Path.empty()) {
    SV->Model = MemoryBuffer::getMemBufferCopy(Bytes, "model");
    Bytes.clear(); // the copy is the model from now on
  } else {
    Expected<std::unique_ptr<MemoryBuffer>> Buf =
        readFileBytes(Path, "model", /*MapAbove=*/0);
    if (!Buf)
      return Buf.takeError();
    SV->Model = std::move(*Buf);
  }
  SV->Weights =
      std::make_unique<ReducedWeightCache>(SV->Model->getBuffer(), SV->Model);
  SV->Path = std::move(Path);
  SV->Opts = Opts;
  SV->GivenRanges = Opts.InputRanges;
  SV->Opts.InputRanges.clear();
  SV->Opts.MaxShapeVariants = std::max(1u, Opts.MaxShapeVariants);
  SV->Pool = std::make_shared<DeviceWeightPool>();

  // Each input's ranges: given, else fixed (a shape given, static dims,
  // sized symbols) or taken from a ranged dim of the same symbol.
  StringMap<std::pair<unsigned, unsigned>> SymbolAt;
  std::vector<std::vector<DimRange>> Ranges(S->Inputs.size());
  for (unsigned In = 0; In < S->Inputs.size(); ++In) {
    const ValueSummary &V = S->Inputs[In];
    if (V.Rank < 0)
      return dynError("input '" + V.Name + "' (" + V.TypeText +
                      ") has no known rank: dynamic shapes need one");
    auto Given = Opts.InputRanges.find(V.Name);
    auto Fixed = Opts.InputShapes.find(V.Name);
    if (Given != Opts.InputRanges.end() &&
        Given->second.size() != size_t(V.Rank))
      return dynError(formatv("input range for '{0}': the input has rank {1} "
                              "({2}), the range has {3} dims",
                              V.Name, V.Rank, V.TypeText,
                              Given->second.size()));
    for (int D = 0; D < V.Rank; ++D) {
      DimRange R{-1, -1};
      if (Given != Opts.InputRanges.end()) {
        R = Given->second[D];
        if (R.Min < 0 || R.Min > R.Max || R.Max > MaxDimSize)
          return dynError(formatv("input range for '{0}' dim {1}: {2}..{3} "
                                  "is not a range of sizes (0 <= min <= max "
                                  "<= {4})",
                                  V.Name, D, R.Min, R.Max, MaxDimSize));
        if (V.StaticDims[D] >= 0 &&
            (R.Min != V.StaticDims[D] || R.Max != V.StaticDims[D]))
          return dynError(formatv("input range for '{0}' dim {1}: the dim is "
                                  "fixed to {2} ({3})",
                                  V.Name, D, V.StaticDims[D], V.TypeText));
      } else if (V.StaticDims[D] >= 0) {
        R = {V.StaticDims[D], V.StaticDims[D]};
      } else if (Fixed != Opts.InputShapes.end() &&
                 Fixed->second.size() == size_t(V.Rank)) {
        R = {Fixed->second[D], Fixed->second[D]};
      } else if (auto Sz = Opts.SymbolSizes.find(V.DimSymbols[D]);
                 !V.DimSymbols[D].empty() && Sz != Opts.SymbolSizes.end()) {
        R = {Sz->second, Sz->second};
      }
      Ranges[In].push_back(R);
    }
  }
  // Ties: every dim of a symbol takes the first ranged dim of that symbol.
  std::vector<std::vector<std::pair<unsigned, unsigned>>> Source(
      S->Inputs.size());
  for (unsigned In = 0; In < S->Inputs.size(); ++In)
    for (int D = 0; D < S->Inputs[In].Rank; ++D) {
      Source[In].push_back({In, unsigned(D)});
      const std::string &Sym = S->Inputs[In].DimSymbols[D];
      if (Sym.empty() || S->Inputs[In].StaticDims[D] >= 0)
        continue;
      bool Ranged = Opts.InputRanges.count(S->Inputs[In].Name);
      if (!SymbolAt.count(Sym) && (Ranged || Ranges[In][D].Min >= 0))
        SymbolAt[Sym] = {In, unsigned(D)};
    }
  for (unsigned In = 0; In < S->Inputs.size(); ++In)
    for (int D = 0; D < S->Inputs[In].Rank; ++D) {
      const std::string &Sym = S->Inputs[In].DimSymbols[D];
      auto It = Sym.empty() ? SymbolAt.end() : SymbolAt.find(Sym);
      if (It == SymbolAt.end() || S->Inputs[In].StaticDims[D] >= 0)
        continue;
      auto [SrcIn, SrcDim] = It->second;
      if (SrcIn == In && SrcDim == unsigned(D))
        continue;
      DimRange Src = Ranges[SrcIn][SrcDim];
      DimRange &Mine = Ranges[In][D];
      if (Opts.InputRanges.count(S->Inputs[In].Name) && !(Mine == Src))
        return dynError(formatv(
            "input range for '{0}' dim {1}: {2}..{3}, but the dim is '{4}' "
            "as '{5}' dim {6}, whose range is {7}..{8}",
            S->Inputs[In].Name, D, Mine.Min, Mine.Max, Sym,
            S->Inputs[SrcIn].Name, SrcDim, Src.Min, Src.Max));
      Mine = Src;
      Source[In][D] = It->second;
    }
  for (unsigned In = 0; In < S->Inputs.size(); ++In)
    for (int D = 0; D < S->Inputs[In].Rank; ++D)
      if (Ranges[In][D].Min < 0)
        return dynError(formatv(
            "input '{0}' ({1}) dim {2} is dynamic and has no range: give "
            "one for every dim, e.g. --shape {0}=MIN..MAXx... (or a fixed "
            "shape)",
            S->Inputs[In].Name, S->Inputs[In].TypeText, D));
  SV->Source = std::move(Source);
  for (const ValueSummary &V : S->Inputs)
    SV->InputNames.push_back(V.Name);

  std::vector<std::vector<int64_t>> MaxDims;
  for (const auto &R : Ranges) {
    std::vector<int64_t> M;
    for (DimRange X : R)
      M.push_back(X.Max);
    MaxDims.push_back(std::move(M));
  }
  Expected<std::shared_ptr<CompiledModel>> Max = SV->compile(MaxDims);
  if (!Max)
    return Max.takeError();
  SV->Max = *Max;
  SV->Compiles = 1;
  SV->Lru.push_front({key(MaxDims), SV->Max});
  for (unsigned In = 0; In < S->Inputs.size(); ++In) {
    TensorInfo T = SV->Max->inputs()[In];
    T.Ranges = Ranges[In];
    SV->Inputs.push_back(std::move(T));
  }
  SV->Outputs.assign(SV->Max->outputs().begin(), SV->Max->outputs().end());
  return std::move(SV);
}

Error ShapeVariants::checkInput(unsigned Index, ArrayRef<int64_t> Dims) const {
  if (Index >= Inputs.size())
    return dynError("no input #" + Twine(Index));
  const TensorInfo &T = Inputs[Index];
  if (Dims.size() != T.Ranges.size())
    return dynError(formatv("input '{0}' has rank {1}, got the shape {2}",
                            T.Name, T.Ranges.size(), dimsText(Dims)));
  for (size_t D = 0; D < Dims.size(); ++D)
    if (!T.Ranges[D].contains(Dims[D]))
      return dynError(formatv("input '{0}' dim {1} is {2}, outside the "
                              "model's range {3}..{4} (shape {5})",
                              T.Name, D, Dims[D], T.Ranges[D].Min,
                              T.Ranges[D].Max, dimsText(Dims)));
  return Error::success();
}

Error ShapeVariants::check(ArrayRef<std::vector<int64_t>> Dims) const {
  if (Dims.size() != Inputs.size())
    return dynError("the model takes " + Twine(Inputs.size()) +
                    " inputs, got shapes for " + Twine(Dims.size()));
  for (unsigned In = 0; In < Dims.size(); ++In)
    if (Error E = checkInput(In, Dims[In]))
      return E;
  for (unsigned In = 0; In < Dims.size(); ++In)
    for (unsigned D = 0; D < Dims[In].size(); ++D) {
      auto [SrcIn, SrcDim] = Source[In][D];
      if (Dims[In][D] != Dims[SrcIn][SrcDim])
        return dynError(formatv(
            "input '{0}' dim {1} is {2}, but it is the same symbol as input "
            "'{3}' dim {4}, which is {5}",
            Inputs[In].Name, D, Dims[In][D], Inputs[SrcIn].Name, SrcDim,
            Dims[SrcIn][SrcDim]));
    }
  return Error::success();
}

ArrayRef<std::pair<unsigned, unsigned>>
ShapeVariants::tiedTo(unsigned Index) const {
  return Source[Index];
}

Expected<std::shared_ptr<CompiledModel>>
ShapeVariants::compile(ArrayRef<std::vector<int64_t>> Dims) const {
  CompileOptions O = Opts;
  // A shape first seen mid-serving compiles without timing candidates.
  O.Tune = false;
  for (unsigned In = 0; In < Dims.size(); ++In)
    O.InputShapes[InputNames[In]] = Dims[In];
  VariantOptions Variant;
  Variant.Weights = Weights.get();
  Expected<std::shared_ptr<CompiledModel>> M =
      RuntimeAccess::compileShared(Model->getBuffer(), Model, Path, O, Variant);
  if (!M)
    return createStringError(inconvertibleErrorCode(),
                             "compiling the model for the input shape " +
                                 key(Dims) + ": " + toString(M.takeError()));
  if (O.Backend == ExecutionBackend::Cuda)
    RuntimeAccess::useWeightPool(**M, Pool);
  return M;
}

Expected<std::shared_ptr<CompiledModel>>
ShapeVariants::get(ArrayRef<std::vector<int64_t>> Dims) {
  if (Error E = check(Dims))
    return std::move(E);
  std::string K = key(Dims);
  std::lock_guard<std::mutex> Lock(Mu);
  for (auto It = Lru.begin(); It != Lru.end(); ++It)
    if (It->first == K) {
      Lru.splice(Lru.begin(), Lru, It);
      return Lru.front().second;
    }
  Expected<std::shared_ptr<CompiledModel>> M = compile(Dims);
  if (!M)
    return M.takeError();
  ++Compiles;
  Lru.push_front({K, *M});
  if (Lru.size() > Opts.MaxShapeVariants)
    Lru.pop_back(); // contexts using it keep it alive
  return M;
}

Expected<DynamicPlan> ShapeVariants::toPlan() const {
  DynamicPlan P;
  P.OnnxBytes = Model->getBuffer().str();
  // The plan holds the model's bytes only: one whose weights live in
  // external files would not import from it.
  if (Expected<std::unique_ptr<Graph>> G = importOnnxBytes(P.OnnxBytes, ""); !G)
    return dynError("a dynamic model is saved with the ONNX model inside the "
                    "plan, and this model does not import from its bytes "
                    "alone (" +
                    toString(G.takeError()) +
                    "): models with external data cannot be saved as a "
                    "dynamic plan yet");
  P.Opts = Opts;
  P.Opts.InputRanges = GivenRanges;
  P.Opts.CacheDir.clear();
  P.Opts.Progress = nullptr;
  P.Opts.OnPhase = nullptr;
  return std::move(P);
}

size_t ShapeVariants::compiled() const {
  std::lock_guard<std::mutex> Lock(Mu);
  return Compiles;
}

//===----------------------------------------------------------------------===//
// DynamicContext
//===----------------------------------------------------------------------===//

DynamicContext::DynamicContext(std::shared_ptr<CompiledModel> M,
                               ShapeVariants &SV)
    : Model(std::move(M)), SV(SV) {
  for (const TensorInfo &T : SV.inputs())
    InDims.push_back(T.Dims);
  InBind.assign(SV.inputs().size(), nullptr);
  OutBind.assign(SV.outputs().size(), nullptr);
}

DynamicContext::~DynamicContext() {
  Lru.clear(); // variant contexts first: they use Shared
  std::lock_guard<std::mutex> Lock(RuntimeAccess::captureMutex());
  for (char *B : {InBlock, OutBlock, Shared})
    if (B)
      cudaFree(B);
  for (cudaEvent_t E : {Before, After})
    if (E)
      cudaEventDestroy(E);
  if (Own)
    cudaStreamDestroy(Own);
}

size_t DynamicContext::bytesOf(const TensorInfo &T,
                               ArrayRef<int64_t> Dims) const {
  size_t N = dtypeSize(T.Elem);
  for (int64_t D : Dims)
    N *= size_t(D);
  return N;
}

Error DynamicContext::init() {
  uint64_t InBytes = 0;
  for (const TensorInfo &T : SV.inputs())
    InBytes += alignTo256(T.bytes());
  SOLDER_CUDA_TRY(cudaMalloc(reinterpret_cast<void **>(&InBlock),
                             std::max<uint64_t>(InBytes, 256)),
                  "cudaMalloc of the " + Twine(InBytes) +
                      "-byte input buffers (at the max shape)");
  uint64_t At = 0;
  for (const TensorInfo &T : SV.inputs()) {
    OwnIn.push_back(InBlock + At);
    At += alignTo256(T.bytes());
  }
  if (Error E = growOutputs(*SV.maxVariant()))
    return E;
  Expected<uint64_t> Need = RuntimeAccess::contextBlockBytes(*SV.maxVariant());
  if (!Need)
    return Need.takeError();
  SOLDER_CUDA_TRY(cudaMalloc(reinterpret_cast<void **>(&Shared), *Need),
                  "cudaMalloc of the " + Twine(*Need) +
                      "-byte context block (arena at the max shape)");
  SharedBytes = *Need;
  SOLDER_CUDA_TRY(cudaStreamCreateWithFlags(&Own, cudaStreamNonBlocking),
                  "cudaStreamCreate");
  SOLDER_CUDA_TRY(cudaEventCreateWithFlags(&Before, cudaEventDisableTiming),
                  "cudaEventCreate");
  SOLDER_CUDA_TRY(cudaEventCreateWithFlags(&After, cudaEventDisableTiming),
                  "cudaEventCreate");
  return Error::success();
}

Error DynamicContext::growOutputs(const CompiledModel &Variant) {
  uint64_t Need = 0;
  for (const TensorInfo &T : Variant.outputs())
    Need += alignTo256(T.bytes());
  Need = std::max<uint64_t>(Need, 256);
  // Every output slot must fit this variant's output: re-lay them out when
  // one grows (an output larger at a smaller input shape is rare).
  bool Fits = OutBlock != nullptr;
  for (size_t K = 0; Fits && K < Variant.outputs().size(); ++K)
    Fits = Variant.outputs()[K].bytes() <= OutSlot[K];
  if (Fits)
    return Error::success();
  if (OutBlock) {
    std::lock_guard<std::mutex> Lock(RuntimeAccess::captureMutex());
    cudaFree(OutBlock); // synchronizes: no run still writes it
  }
  OutBlock = nullptr;
  SOLDER_CUDA_TRY(cudaMalloc(reinterpret_cast<void **>(&OutBlock), Need),
                  "cudaMalloc of the " + Twine(Need) + "-byte output buffers");
  OwnOut.clear();
  OutSlot.clear();
  uint64_t At = 0;
  for (const TensorInfo &T : Variant.outputs()) {
    OwnOut.push_back(OutBlock + At);
    OutSlot.push_back(alignTo256(T.bytes()));
    At += OutSlot.back();
  }
  return Error::success();
}

Error DynamicContext::setInputShape(unsigned Index, ArrayRef<int64_t> Dims) {
  if (Error E = SV.checkInput(Index, Dims))
    return E;
  InDims[Index].assign(Dims.begin(), Dims.end());
  // Dims of the same symbol follow: the source and everything tied to it.
  for (unsigned D = 0; D < Dims.size(); ++D) {
    auto Src = SV.tiedTo(Index)[D];
    for (unsigned In = 0; In < InDims.size(); ++In)
      for (unsigned E = 0; E < InDims[In].size(); ++E)
        if (SV.tiedTo(In)[E] == Src)
          InDims[In][E] = Dims[D];
  }
  return Error::success();
}

Expected<std::vector<int64_t>> DynamicContext::inputDims(unsigned Index) const {
  if (Index >= InDims.size())
    return dynError("no input #" + Twine(Index));
  return InDims[Index];
}

Expected<std::vector<int64_t>> DynamicContext::outputDims(unsigned Index) {
  if (Index >= SV.outputs().size())
    return dynError("no output #" + Twine(Index));
  if (SV.backend() != ExecutionBackend::Cuda) {
    Expected<std::shared_ptr<CompiledModel>> V = SV.get(InDims);
    if (!V)
      return V.takeError();
    return (*V)->outputs()[Index].Dims;
  }
  Expected<Entry *> E = entry();
  if (!E)
    return E.takeError();
  return (*E)->Variant->outputs()[Index].Dims;
}

Error DynamicContext::bindInput(unsigned Index, const void *Ptr) {
  if (Index >= InBind.size())
    return dynError("no input #" + Twine(Index));
  if (reinterpret_cast<uintptr_t>(Ptr) % 16)
    return dynError("input #" + Twine(Index) +
                    ": device pointer must be 16-byte aligned");
  InBind[Index] = Ptr;
  return Error::success();
}

Error DynamicContext::bindOutput(unsigned Index, void *Ptr) {
  if (Index >= OutBind.size())
    return dynError("no output #" + Twine(Index));
  if (reinterpret_cast<uintptr_t>(Ptr) % 16)
    return dynError("output #" + Twine(Index) +
                    ": device pointer must be 16-byte aligned");
  OutBind[Index] = Ptr;
  return Error::success();
}

const void *DynamicContext::inputBuffer(unsigned Index) const {
  if (Index >= InBind.size())
    return nullptr;
  return InBind[Index] ? InBind[Index] : OwnIn[Index];
}

void *DynamicContext::outputBuffer(unsigned Index) const {
  if (Index >= OutBind.size())
    return nullptr;
  return OutBind[Index] ? OutBind[Index] : OwnOut[Index];
}

Error DynamicContext::copyInputFromHost(unsigned Index, const void *Host,
                                        size_t Bytes, cudaStream_t Stream) {
  if (Index >= InDims.size())
    return dynError("no input #" + Twine(Index));
  const TensorInfo &T = SV.inputs()[Index];
  size_t Want = bytesOf(T, InDims[Index]);
  if (Bytes != Want)
    return dynError(formatv("input '{0}' at shape {1} takes {2} bytes, got "
                            "{3} (set its shape with setInputShape first)",
                            T.Name, dimsText(InDims[Index]), Want, Bytes));
  InBind[Index] = nullptr;
  if (Bytes)
    SOLDER_CUDA_TRY(cudaMemcpyAsync(OwnIn[Index], Host, Bytes,
                                    cudaMemcpyHostToDevice,
                                    Stream ? Stream : Own),
                    "copying input '" + T.Name + "' to the device");
  return Error::success();
}

Error DynamicContext::copyOutputToHost(unsigned Index, void *Host, size_t Bytes,
                                       cudaStream_t Stream) {
  if (Index >= OutBind.size())
    return dynError("no output #" + Twine(Index));
  Expected<Entry *> E = entry();
  if (!E)
    return E.takeError();
  const TensorInfo &T = (*E)->Variant->outputs()[Index];
  if (Bytes != T.bytes())
    return dynError(formatv("output '{0}' at shape {1} has {2} bytes, the "
                            "host buffer {3}",
                            T.Name, dimsText(T.Dims), T.bytes(), Bytes));
  cudaStream_t S = Stream ? Stream : Own;
  if (Bytes)
    SOLDER_CUDA_TRY(cudaMemcpyAsync(Host, outputBuffer(Index), Bytes,
                                    cudaMemcpyDeviceToHost, S),
                    "copying output '" + T.Name + "' to the host");
  SOLDER_CUDA_TRY(cudaStreamSynchronize(S), "running the model");
  return Error::success();
}

Expected<DynamicContext::Entry *> DynamicContext::entry() {
  if (Error E = SV.check(InDims))
    return std::move(E);
  std::string K = ShapeVariants::key(InDims);
  for (auto It = Lru.begin(); It != Lru.end(); ++It)
    if (It->Key == K) {
      Lru.splice(Lru.begin(), Lru, It);
      return &Lru.front();
    }
  Expected<std::shared_ptr<CompiledModel>> V = SV.get(InDims);
  if (!V)
    return V.takeError();
  Expected<uint64_t> Need = RuntimeAccess::contextBlockBytes(**V);
  if (!Need)
    return Need.takeError();
  if (*Need > SharedBytes) {
    // Larger than the max shape's block (rare): every kept context points
    // into the old block, so all of them go.
    for (Entry &X : Lru)
      DroppedLaunches += X.Ctx->graphLaunches();
    Lru.clear();
    std::lock_guard<std::mutex> Lock(RuntimeAccess::captureMutex());
    cudaFree(Shared); // synchronizes: no run still uses it
    Shared = nullptr;
    SharedBytes = 0;
    SOLDER_CUDA_TRY(cudaMalloc(reinterpret_cast<void **>(&Shared), *Need),
                    "cudaMalloc of the " + Twine(*Need) +
                        "-byte context block");
    SharedBytes = *Need;
  }
  if (Error E = growOutputs(**V))
    return std::move(E);
  Expected<std::unique_ptr<ExecutionContext>> C =
      RuntimeAccess::createContextIn(**V, Shared, SharedBytes);
  if (!C)
    return C.takeError();
  (*C)->setUseCudaGraph(UseGraph);
  Lru.push_front({K, *V, std::move(*C)});
  while (Lru.size() > SV.capacity()) {
    DroppedLaunches += Lru.back().Ctx->graphLaunches();
    Lru.pop_back();
  }
  return &Lru.front();
}

Expected<ExecutionContext *> DynamicContext::current() {
  Expected<Entry *> E = entry();
  if (!E)
    return E.takeError();
  ExecutionContext &C = *(*E)->Ctx;
  for (unsigned K = 0; K < InBind.size(); ++K)
    if (Error Err = C.bindInput(K, inputBuffer(K)))
      return std::move(Err);
  for (unsigned K = 0; K < OutBind.size(); ++K)
    if (Error Err = C.bindOutput(K, outputBuffer(K)))
      return std::move(Err);
  return &C;
}

Error DynamicContext::run(cudaStream_t Stream) {
  Expected<ExecutionContext *> C = current();
  if (!C)
    return C.takeError();
  if (Stream)
    return (*C)->run(Stream);
  // As a static context does: on the own stream (where copies without a
  // stream went), ordered after and before the legacy default stream.
  SOLDER_CUDA_TRY(cudaEventRecord(Before, nullptr), "cudaEventRecord");
  SOLDER_CUDA_TRY(cudaStreamWaitEvent(Own, Before, 0), "cudaStreamWaitEvent");
  if (Error E = (*C)->run(Own))
    return E;
  SOLDER_CUDA_TRY(cudaEventRecord(After, Own), "cudaEventRecord");
  SOLDER_CUDA_TRY(cudaStreamWaitEvent(nullptr, After, 0),
                  "cudaStreamWaitEvent");
  return Error::success();
}

Expected<std::vector<Tensor>> DynamicContext::runHost(ArrayRef<Tensor> Inputs,
                                                      cudaStream_t Stream) {
  const auto &Ins = SV.inputs();
  if (Inputs.size() != Ins.size())
    return dynError("the model takes " + Twine(Ins.size()) + " inputs, got " +
                    Twine(Inputs.size()));
  for (size_t K = 0; K < Ins.size(); ++K)
    if (Inputs[K].dtype() != Ins[K].Elem)
      return dynError("input '" + Ins[K].Name + "': got " +
                      typeToString(Inputs[K].type()) + ", the model takes " +
                      typeToString(TensorType(Ins[K].Elem, Ins[K].Dims)));
  std::vector<std::vector<int64_t>> Dims;
  for (const Tensor &T : Inputs)
    Dims.emplace_back(T.dims().begin(), T.dims().end());
  if (Error E = SV.check(Dims))
    return std::move(E);
  InDims = Dims;
  if (SV.backend() != ExecutionBackend::Cuda) {
    Expected<std::shared_ptr<CompiledModel>> V = SV.get(InDims);
    if (!V)
      return V.takeError();
    Expected<std::unique_ptr<ExecutionContext>> C = (*V)->createContext();
    if (!C)
      return C.takeError();
    return (*C)->runHost(Inputs, Stream);
  }
  cudaStream_t S = Stream ? Stream : Own;
  for (size_t K = 0; K < Ins.size(); ++K)
    if (Error E =
            copyInputFromHost(K, Inputs[K].rawData(), Inputs[K].byteSize(), S))
      return std::move(E);
  std::fill(OutBind.begin(), OutBind.end(), nullptr);
  if (Error E = run(S))
    return std::move(E);
  Expected<Entry *> E = entry();
  if (!E)
    return E.takeError();
  std::vector<Tensor> Out;
  for (size_t K = 0; K < OutBind.size(); ++K) {
    const TensorInfo &T = (*E)->Variant->outputs()[K];
    Tensor R(T.Elem, T.Dims);
    if (Error Err = copyOutputToHost(K, R.mutableRawData(), R.byteSize(), S))
      return std::move(Err);
    Out.push_back(std::move(R));
  }
  return std::move(Out);
}

void DynamicContext::setUseCudaGraph(bool On) {
  UseGraph = On;
  for (Entry &E : Lru)
    E.Ctx->setUseCudaGraph(On);
}

uint64_t DynamicContext::graphLaunches() const {
  uint64_t N = DroppedLaunches;
  for (const Entry &E : Lru)
    N += E.Ctx->graphLaunches();
  return N;
}

StringRef DynamicContext::cudaGraphFailure() const {
  return Lru.empty() ? StringRef() : Lru.front().Ctx->cudaGraphFailure();
}

} // namespace solder
