//===- PlanFile.cpp - Plans on disk ---------------------------------------===//
//
// A little-endian field-by-field encoding (see PlanFile.h for the header).
// The reader checks every length against the bytes left, so a corrupt
// payload that slipped past the checksum still fails cleanly.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/PlanFile.h"
#include "ir/FileBytes.h"
#include "runtime/cuda/DynamicPlanFile.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/uio.h>
#include <thread>
#include <type_traits>
#include <unistd.h>

using namespace llvm;

namespace solder {

static constexpr char Magic[8] = {'S', 'L', 'D', 'R', 'P', 'L', 'A', 'N'};
static constexpr size_t HeaderBytes = 64;

static constexpr uint64_t WeightsAlign = 4096;

static uint64_t mix(uint64_t H, uint64_t W) {
  H = (H ^ W) * 0x9e3779b97f4a7c15ULL;
  return H ^ (H >> 32);
}

/// Mixes whole 32-byte blocks into the four lanes. The lanes are locals in
/// the loop: stores to an array could alias the char input, which would
/// serialize the loop on memory.
static void mixBlocks(uint64_t (&Lanes)[4], const char *P, size_t Blocks) {
  uint64_t L0 = Lanes[0], L1 = Lanes[1], L2 = Lanes[2], L3 = Lanes[3];
  for (size_t B = 0; B < Blocks; ++B, P += 32) {
    uint64_t W[4];
    std::memcpy(W, P, sizeof(W));
    L0 = mix(L0, W[0]);
    L1 = mix(L1, W[1]);
    L2 = mix(L2, W[2]);
    L3 = mix(L3, W[3]);
  }
  Lanes[0] = L0;
  Lanes[1] = L1;
  Lanes[2] = L2;
  Lanes[3] = L3;
}

void PlanChecksum::update(StringRef Bytes) {
  // An empty StringRef may hold a null pointer, which memcpy must not get
  // even for zero bytes.
  if (Bytes.empty())
    return;
  const char *P = Bytes.data();
  size_t N = Bytes.size();
  Total += N;
  if (TailBytes) {
    size_t Take = std::min(N, sizeof(Tail) - TailBytes);
    std::memcpy(Tail + TailBytes, P, Take);
    TailBytes += Take;
    P += Take;
    N -= Take;
    if (TailBytes < sizeof(Tail))
      return;
    mixBlocks(Lanes, Tail, 1);
    TailBytes = 0;
  }
  size_t Blocks = N / sizeof(Tail);
  mixBlocks(Lanes, P, Blocks);
  P += Blocks * sizeof(Tail);
  N -= Blocks * sizeof(Tail);
  std::memcpy(Tail, P, N);
  TailBytes = N;
}

uint64_t PlanChecksum::finish() const {
  uint64_t H = 0xcbf29ce484222325ULL ^ Total;
  for (uint64_t L : Lanes)
    H = mix(H, L);
  for (size_t I = 0; I < TailBytes; ++I)
    H = mix(H, uint8_t(Tail[I]));
  return H;
}

uint64_t planChecksum(StringRef Bytes) {
  PlanChecksum C;
  C.update(Bytes);
  return C.finish();
}

namespace {

class Writer {
public:
  std::string Out;
  template <typename T> void pod(T V) {
    static_assert(std::is_trivially_copyable<T>::value, "plain data only");
    char B[sizeof(T)];
    std::memcpy(B, &V, sizeof(T)); // the project targets little-endian x86-64
    Out.append(B, sizeof(T));
  }
  void str(StringRef S) {
    pod<uint64_t>(S.size());
    Out.append(S.data(), S.size());
  }
  template <typename T> void podVec(const std::vector<T> &V) {
    pod<uint64_t>(V.size());
    for (const T &X : V)
      pod(X);
  }
  void ref(const BufferRef &R) {
    pod<uint8_t>(uint8_t(R.Space));
    pod<uint32_t>(R.Index);
    pod<uint64_t>(R.Offset);
  }
  void tensor(const PlanTensor &T) {
    str(T.Name);
    pod<uint8_t>(uint8_t(T.Elem));
    podVec(T.Dims);
  }
};

class Reader {
public:
  explicit Reader(StringRef In) : In(In) {}
  bool Failed = false;

  template <typename T> T pod() {
    T V{};
    if (!take(sizeof(T)))
      return V;
    std::memcpy(&V, In.data() + Pos - sizeof(T), sizeof(T));
    return V;
  }
  std::string str() {
    uint64_t N = pod<uint64_t>();
    if (!take(N))
      return {};
    return In.substr(Pos - N, N).str();
  }
  template <typename T> std::vector<T> podVec() {
    uint64_t N = pod<uint64_t>();
    std::vector<T> V;
    if (N > (In.size() - Pos) / sizeof(T)) {
      Failed = true;
      return V;
    }
    for (uint64_t I = 0; I < N; ++I)
      V.push_back(pod<T>());
    return V;
  }
  /// A count of records each at least MinBytes long.
  uint64_t count(size_t MinBytes) {
    uint64_t N = pod<uint64_t>();
    if (N > (In.size() - Pos) / MinBytes) {
      Failed = true;
      return 0;
    }
    return N;
  }
  BufferRef ref() {
    BufferRef R;
    uint8_t S = pod<uint8_t>();
    if (S > uint8_t(BufferSpace::Scratch))
      Failed = true;
    R.Space = BufferSpace(S);
    R.Index = pod<uint32_t>();
    R.Offset = pod<uint64_t>();
    return R;
  }
  DType dtype() {
    uint8_t D = pod<uint8_t>();
    if (D == 0 || D > uint8_t(DType::Bool))
      Failed = true;
    return DType(D);
  }
  PlanTensor tensor() {
    PlanTensor T;
    T.Name = str();
    T.Elem = dtype();
    T.Dims = podVec<int64_t>();
    return T;
  }
  bool atEnd() const { return Pos == In.size(); }

private:
  bool take(uint64_t N) {
    if (Failed || N > In.size() - Pos) {
      Failed = true;
      return false;
    }
    Pos += N;
    return true;
  }
  StringRef In;
  size_t Pos = 0;
};

void writeArr3(Writer &W, const std::array<unsigned, 3> &A) {
  for (unsigned X : A)
    W.pod<uint32_t>(X);
}
std::array<unsigned, 3> readArr3(Reader &R) {
  std::array<unsigned, 3> A;
  for (unsigned &X : A)
    X = R.pod<uint32_t>();
  return A;
}

Error planFileError(const Twine &Msg) {
  return createStringError(inconvertibleErrorCode(), Msg);
}

} // namespace

/// Every field of the plan but the weights.
static std::string serializeMetadata(const Plan &P) {
  Writer W;
  W.str(P.ModelName);
  W.pod<uint64_t>(P.Inputs.size());
  for (const PlanTensor &T : P.Inputs)
    W.tensor(T);
  W.pod<uint64_t>(P.Outputs.size());
  for (const PlanTensor &T : P.Outputs)
    W.tensor(T);
  W.str(P.IrText);
  W.str(P.Arch);
  W.pod<uint8_t>(uint8_t(P.Prec));
  W.str(P.TunedOn);
  W.pod<uint64_t>(P.Kernels.size());
  for (const PlanKernel &K : P.Kernels) {
    W.str(K.Name);
    W.str(K.Source);
    W.str(K.Cubin);
    W.str(K.Symbol);
    writeArr3(W, K.Grid);
    writeArr3(W, K.Block);
    W.pod<uint32_t>(K.DynamicSharedBytes);
    W.pod<uint64_t>(K.NodeNames.size());
    for (const std::string &N : K.NodeNames)
      W.str(N);
    W.str(K.Summary);
    W.pod<int64_t>(K.GroupId);
    W.pod<uint8_t>(K.DependentLaunch);
    W.pod<uint8_t>(K.Cooperative);
    W.pod<uint64_t>(K.TensorMaps.size());
    for (const PlanTensorMap &T : K.TensorMaps) {
      W.pod<uint32_t>(T.Arg);
      W.pod<uint8_t>(uint8_t(T.Elem));
      W.pod<int64_t>(T.Dims[0]);
      W.pod<int64_t>(T.Dims[1]);
      W.pod<int64_t>(T.RowBytes);
      W.pod<uint32_t>(T.Box[0]);
      W.pod<uint32_t>(T.Box[1]);
    }
    W.pod<uint64_t>(K.Counts.size());
    for (int64_t C : K.Counts)
      W.pod<int64_t>(C);
  }
  W.pod<uint64_t>(P.Gemms.size());
  for (const GemmConfig &C : P.Gemms) {
    W.pod<uint8_t>(uint8_t(C.Elem));
    W.pod<uint8_t>(C.TransA);
    W.pod<uint8_t>(C.TransB);
    for (int64_t V : {C.M, C.N, C.K, C.Lda, C.Ldb, C.Ldd, C.Batch, C.StrideA,
                      C.StrideB, C.StrideD})
      W.pod<int64_t>(V);
    for (const std::vector<int64_t> *V :
         {&C.BatchDims, &C.BatchStrideA, &C.BatchStrideB, &C.BatchStrideD})
      W.podVec(*V);
    W.pod<float>(C.Alpha);
    W.pod<float>(C.Beta);
    W.pod<uint8_t>(uint8_t(C.Epi));
    W.pod<uint8_t>(uint8_t(C.CFrom));
    W.pod<uint8_t>(C.AllowTF32);
    W.pod<uint8_t>(C.HasAlgo);
    for (uint64_t X : C.AlgoData)
      W.pod<uint64_t>(X);
    W.pod<uint64_t>(C.AlgoWorkspace);
    W.ref(C.A);
    W.ref(C.B);
    W.ref(C.BiasVec);
    W.ref(C.C);
    W.ref(C.D);
  }
  W.pod<uint64_t>(P.Convs.size());
  for (const ConvConfig &C : P.Convs) {
    W.pod<uint8_t>(uint8_t(C.Elem));
    W.pod<uint8_t>(C.Transpose);
    W.pod<uint8_t>(C.Nhwc);
    W.podVec(C.XDims);
    W.podVec(C.WDims);
    W.podVec(C.YDims);
    W.podVec(C.Pads);
    W.podVec(C.Strides);
    W.podVec(C.Dilations);
    W.pod<int32_t>(C.Groups);
    W.pod<uint8_t>(C.AllowTF32);
    W.pod<int32_t>(C.Algo);
    W.pod<int32_t>(C.MathType);
    W.pod<uint8_t>(C.Fused);
    W.pod<uint8_t>(uint8_t(C.Act));
    W.pod<uint8_t>(C.HasZ);
    W.pod<float>(C.Alpha2);
    W.ref(C.X);
    W.ref(C.W);
    W.ref(C.Y);
    W.ref(C.Bias);
    W.ref(C.Z);
    W.pod<uint8_t>(C.Graph);
    W.pod<uint64_t>(C.GraphTensors.size());
    for (const ConvGraphTensor &T : C.GraphTensors) {
      W.pod<uint8_t>(uint8_t(T.K));
      W.pod<uint8_t>(uint8_t(T.Elem));
      for (int64_t X : T.Dims)
        W.pod<int64_t>(X);
      for (int64_t X : T.Strides)
        W.pod<int64_t>(X);
      W.pod<float>(T.ByValue);
    }
    W.pod<uint64_t>(C.GraphOps.size());
    for (const ConvGraphOp &O : C.GraphOps) {
      W.pod<uint8_t>(uint8_t(O.Mode));
      W.pod<int32_t>(O.X);
      W.pod<int32_t>(O.B);
      W.pod<int32_t>(O.Y);
      W.pod<float>(O.Lower);
      W.pod<float>(O.Upper);
      W.pod<float>(O.Slope);
    }
    W.pod<uint64_t>(C.GraphReads.size());
    for (const BufferRef &R : C.GraphReads)
      W.ref(R);
    W.pod<int32_t>(C.GraphEngine);
  }
  W.pod<uint64_t>(P.Copies.size());
  for (const CopyConfig &C : P.Copies) {
    W.ref(C.Src);
    W.ref(C.Dst);
    W.pod<uint64_t>(C.Bytes);
  }
  W.pod<uint64_t>(P.Attentions.size());
  for (const AttentionConfig &C : P.Attentions) {
    W.pod<uint8_t>(uint8_t(C.Elem));
    for (int64_t X :
         {C.Batch, C.QHeads, C.KvHeads, C.QLen, C.KvLen, C.HeadDim, C.VHeadDim})
      W.pod<int64_t>(X);
    for (const auto *St : {&C.QStrides, &C.KStrides, &C.VStrides, &C.OStrides,
                           &C.BiasDims, &C.BiasStrides})
      for (int64_t X : *St)
        W.pod<int64_t>(X);
    W.pod<float>(C.Scale);
    W.pod<uint8_t>(C.Causal);
    W.pod<uint8_t>(C.HasBias);
    W.pod<uint8_t>(uint8_t(C.BiasElem));
    W.ref(C.Q);
    W.ref(C.K);
    W.ref(C.V);
    W.ref(C.Bias);
    W.ref(C.O);
  }
  W.pod<uint64_t>(P.Steps.size());
  for (const PlanStep &S : P.Steps) {
    W.pod<uint8_t>(uint8_t(S.K));
    W.pod<uint32_t>(S.Index);
    W.pod<uint64_t>(S.Args.size());
    for (const BufferRef &R : S.Args)
      W.ref(R);
    W.str(S.Label);
    W.pod<int64_t>(S.GroupId);
  }
  W.pod<uint64_t>(P.Buffers.size());
  for (const PlanBuffer &B : P.Buffers) {
    W.str(B.Name);
    W.pod<uint64_t>(B.Offset);
    W.pod<uint64_t>(B.Bytes);
    W.pod<uint32_t>(B.FirstStep);
    W.pod<uint32_t>(B.LastStep);
  }
  W.pod<uint64_t>(P.ArenaBytes);
  W.pod<uint64_t>(P.NaiveArenaBytes);
  W.pod<uint64_t>(P.ScratchBytes);
  auto Strings = [&](const std::vector<std::string> &V) {
    W.pod<uint64_t>(V.size());
    for (const std::string &S : V)
      W.str(S);
  };
  auto Values = [&](const std::vector<PlanValue> &V) {
    W.pod<uint64_t>(V.size());
    for (const PlanValue &X : V) {
      W.str(X.Name);
      W.pod<uint8_t>(uint8_t(X.Elem));
      W.podVec(X.Dims);
      W.ref(X.Ref);
    }
  };
  W.pod<uint64_t>(P.Groups.size());
  for (const PlanGroup &G : P.Groups) {
    W.pod<int64_t>(G.Id);
    W.str(G.Kind);
    Strings(G.Members);
    W.str(G.RunsAs);
    W.podVec(G.Steps);
    Values(G.Operands);
    Values(G.Results);
  }
  W.pod<uint64_t>(P.Decisions.size());
  for (const DecisionRecord &D : P.Decisions) {
    W.str(D.Pass);
    W.str(D.Node);
    W.str(D.OnnxName);
    W.pod<uint8_t>(D.Applied);
    W.str(D.Reason);
  }
  return std::move(W.Out);
}

static uint64_t weightsOffset(uint64_t MetadataBytes) {
  return (HeaderBytes + MetadataBytes + WeightsAlign - 1) / WeightsAlign *
         WeightsAlign;
}

static std::string header(uint64_t MetadataBytes, uint64_t MetadataSum,
                          uint64_t WeightBytes, uint64_t WeightSum) {
  Writer H;
  H.Out.assign(Magic, sizeof(Magic));
  H.pod<uint32_t>(PlanFormatVersion);
  H.pod<uint32_t>(0);
  H.pod<uint64_t>(MetadataBytes);
  H.pod<uint64_t>(WeightBytes);
  H.pod<uint64_t>(MetadataSum);
  H.pod<uint64_t>(WeightSum);
  H.Out.resize(HeaderBytes, '\0');
  return std::move(H.Out);
}

void appendParts(StringRef Bytes, std::vector<StringRef> &Parts) {
  for (size_t At = 0; At < Bytes.size(); At += 256 << 10)
    Parts.push_back(Bytes.substr(At, 256 << 10));
}

/// A large blob is checksummed on a second thread while this one writes
/// it in batches of a few MiB: the checksum, faster than the kernel's copy
/// into the page cache, runs ahead and takes the first touch of each mapped
/// page. ResNet-50's 97 MiB of weights are most of a cached compile's time;
/// 256 KiB writes took 1.5x the time of 4 MiB batches, and one writev of
/// all of it twice (measured on the development machine, ext4): batches.
void checksumAndWrite(ArrayRef<StringRef> Parts, PlanChecksum &Sum,
                      PartWriter Write) {
  uint64_t Bytes = 0;
  for (StringRef Part : Parts)
    Bytes += Part.size();
  if (Bytes < (16u << 20)) {
    for (StringRef Part : Parts)
      Sum.update(Part);
    Write(Parts);
    return;
  }
  std::thread Checksummer([&] {
    for (StringRef Part : Parts)
      Sum.update(Part);
  });
  constexpr uint64_t BatchBytes = 4 << 20;
  size_t Begin = 0;
  uint64_t Batch = 0;
  for (size_t I = 0; I < Parts.size(); ++I) {
    Batch += Parts[I].size();
    if (Batch >= BatchBytes || I + 1 == Parts.size()) {
      Write(Parts.slice(Begin, I + 1 - Begin));
      Begin = I + 1;
      Batch = 0;
    }
  }
  Checksummer.join();
}

/// Writes the whole file to OS (Meta is serializeMetadata(P)), the weights
/// through Write: they stream from their sources and are checksummed on the
/// way; the header is written last, in place.
static void emitPlan(const Plan &P, StringRef Meta, raw_pwrite_stream &OS,
                     PartWriter Write) {
  OS << std::string(HeaderBytes, '\0') << Meta;
  OS.write_zeros(weightsOffset(Meta.size()) - HeaderBytes - Meta.size());
  std::vector<StringRef> Parts;
  P.Weights.forEachChunk([&](StringRef C) { appendParts(C, Parts); });
  PlanChecksum WeightSum;
  checksumAndWrite(Parts, WeightSum, Write);
  std::string H = header(Meta.size(), planChecksum(Meta), P.Weights.size(),
                         WeightSum.finish());
  OS.pwrite(H.data(), H.size(), 0);
}

std::string emitToString(FileEmitter Emit) {
  SmallVector<char, 0> Out;
  raw_svector_ostream OS(Out);
  Emit(OS, [&](ArrayRef<StringRef> Parts) {
    for (StringRef Part : Parts)
      OS << Part;
  });
  return std::string(Out.data(), Out.size());
}

std::string serializePlan(const Plan &P) {
  std::string Meta = serializeMetadata(P);
  return emitToString([&](raw_pwrite_stream &OS, PartWriter Write) {
    emitPlan(P, Meta, OS, Write);
  });
}

/// Within cuTensorMapEncodeTiled's limits: f16/bf16, dims and strides
/// within 2^40 (checked before any product, so a hostile file cannot
/// overflow them), rows of 16-byte multiples holding the inner dim, boxes
/// of 1 to 64 inner elements (128 bytes of swizzle) by 1 to 256.
static bool tensorMapShapeOk(const TensorMapShape &T) {
  const int64_t Max = int64_t(1) << 40;
  if ((T.Elem != DType::F16 && T.Elem != DType::BF16) || T.Dims[0] <= 0 ||
      T.Dims[0] > Max || T.Dims[1] <= 0 || T.Dims[1] > Max || T.RowBytes <= 0 ||
      T.RowBytes > Max || T.RowBytes % 16)
    return false;
  return T.RowBytes >= T.Dims[0] * 2 && T.Box[0] >= 1 && T.Box[0] <= 64 &&
         T.Box[1] >= 1 && T.Box[1] <= 256;
}

/// Whether the operation graph of C refers only to its own tensors, each
/// operation has the operands its mode takes, and exactly the last one
/// writes the one output.
template <typename RefCheck>
static bool convGraphWellFormed(const ConvConfig &C, RefCheck CheckRef) {
  size_t N = C.GraphTensors.size();
  if (!C.Nhwc || C.Transpose || C.Fused ||
      (C.Elem != DType::F16 && C.Elem != DType::BF16) || N == 0 ||
      C.GraphOps.empty() || C.GraphReads.size() != N)
    return false;
  using Kind = ConvGraphTensor::Kind;
  auto In = [&](int32_t I) { return I >= 0 && size_t(I) < N; };
  unsigned Outputs = 0;
  for (size_t I = 0; I < N; ++I) {
    const ConvGraphTensor &T = C.GraphTensors[I];
    for (int64_t D : T.Dims)
      if (D < 1 || D > MaxElementCount)
        return false;
    if (T.K == Kind::Operand && !CheckRef(C.GraphReads[I]))
      return false;
    Outputs += T.K == Kind::Output;
  }
  if (Outputs != 1 || C.GraphTensors[0].K != Kind::Virtual)
    return false;
  for (const ConvGraphOp &O : C.GraphOps) {
    bool Binary = convPointwiseBinary(O.Mode);
    if (!In(O.X) || !In(O.Y) || (Binary ? !In(O.B) : O.B != -1))
      return false;
    Kind Y = C.GraphTensors[O.Y].K;
    if ((Y != Kind::Virtual && Y != Kind::Output) || O.Y == O.X || O.Y == O.B ||
        C.GraphTensors[O.X].K == Kind::Output ||
        (Binary && C.GraphTensors[O.B].K == Kind::Output))
      return false;
  }
  return C.GraphTensors[C.GraphOps.back().Y].K == Kind::Output;
}

/// Checks the decoded plan refers only to things it has.
static Error validatePlan(const Plan &P) {
  auto CheckRef = [&](const BufferRef &R) {
    switch (R.Space) {
    case BufferSpace::Input:
      return R.Index < P.Inputs.size();
    case BufferSpace::Output:
      return R.Index < P.Outputs.size();
    case BufferSpace::Weights:
      return R.Offset <= P.Weights.size();
    case BufferSpace::Arena:
      return R.Offset <= P.ArenaBytes;
    case BufferSpace::Scratch:
      return R.Offset < P.ScratchBytes;
    }
    return false;
  };
  for (const PlanStep &S : P.Steps) {
    size_t Limit = S.K == PlanStep::Kind::Kernel ? P.Kernels.size()
                   : S.K == PlanStep::Kind::Gemm ? P.Gemms.size()
                   : S.K == PlanStep::Kind::Conv ? P.Convs.size()
                   : S.K == PlanStep::Kind::Copy ? P.Copies.size()
                                                 : P.Attentions.size();
    if (S.Index >= Limit)
      return planFileError("plan step '" + S.Label + "' refers to a missing " +
                           "kernel or library call");
    if (S.K == PlanStep::Kind::Kernel) {
      for (const PlanTensorMap &T : P.Kernels[S.Index].TensorMaps)
        if (T.Arg >= S.Args.size() || !tensorMapShapeOk(T))
          return planFileError("plan step '" + S.Label +
                               "' has a malformed tensor map");
      for (int64_t C : P.Kernels[S.Index].Counts)
        if (C < 0 || C > MaxElementCount)
          return planFileError("plan step '" + S.Label +
                               "' has a count out of range");
    }
    for (const BufferRef &R : S.Args)
      if (!CheckRef(R))
        return planFileError("plan step '" + S.Label +
                             "' refers to a missing buffer");
  }
  for (const GemmConfig &C : P.Gemms)
    if (!CheckRef(C.A) || !CheckRef(C.B) || !CheckRef(C.D) ||
        !CheckRef(C.BiasVec) || !CheckRef(C.C))
      return planFileError("a matmul of the plan refers to a missing buffer");
  for (const ConvConfig &C : P.Convs)
    if (!CheckRef(C.X) || !CheckRef(C.W) || !CheckRef(C.Y) ||
        C.XDims.size() != C.WDims.size() || C.XDims.size() != C.YDims.size() ||
        C.XDims.size() < 4 || C.Pads.size() + 2 != C.XDims.size() ||
        C.Strides.size() != C.Pads.size() ||
        C.Dilations.size() != C.Pads.size())
      return planFileError("a convolution of the plan is malformed");
  for (const ConvConfig &C : P.Convs) {
    if (C.Fused && (C.Transpose || !CheckRef(C.Bias) || !CheckRef(C.Z)))
      return planFileError("a fused convolution of the plan is malformed");
    if (C.Nhwc && (C.Transpose || C.XDims.size() != 4))
      return planFileError("an NHWC convolution of the plan is not 2-D");
    if (C.Graph && !convGraphWellFormed(C, CheckRef))
      return planFileError("a convolution graph of the plan is malformed");
  }
  for (const CopyConfig &C : P.Copies)
    if (!CheckRef(C.Src) || !CheckRef(C.Dst))
      return planFileError("a copy of the plan refers to a missing buffer");
  for (const AttentionConfig &C : P.Attentions) {
    bool Sizes = C.Batch > 0 && C.QHeads > 0 && C.KvHeads > 0 &&
                 C.QHeads % C.KvHeads == 0 && C.QLen > 0 && C.KvLen > 0 &&
                 C.HeadDim > 0 && C.VHeadDim > 0;
    if (!Sizes || !CheckRef(C.Q) || !CheckRef(C.K) || !CheckRef(C.V) ||
        !CheckRef(C.O) || (C.HasBias && !CheckRef(C.Bias)) ||
        (C.Elem != DType::F16 && C.Elem != DType::BF16) ||
        (C.HasBias && C.BiasElem != C.Elem && C.BiasElem != DType::F32))
      return planFileError("an attention call of the plan is malformed");
  }
  for (const PlanGroup &G : P.Groups) {
    for (uint32_t S : G.Steps)
      if (S >= P.Steps.size())
        return planFileError("group '" + G.Kind + " " + Twine(G.Id) +
                             "' of the plan refers to a missing step");
    for (const auto *Vs : {&G.Operands, &G.Results})
      for (const PlanValue &V : *Vs)
        if (!CheckRef(V.Ref))
          return planFileError("group '" + G.Kind + " " + Twine(G.Id) +
                               "' of the plan refers to a missing buffer");
  }
  return Error::success();
}

Expected<Plan> deserializePlan(StringRef Bytes,
                               std::shared_ptr<const void> Owner) {
  if (Bytes.size() < sizeof(Magic) ||
      std::memcmp(Bytes.data(), Magic, sizeof(Magic)) != 0)
    return planFileError("not a solder plan file (bad magic)");
  if (Bytes.size() < HeaderBytes)
    return planFileError("plan file is truncated (" + Twine(Bytes.size()) +
                         " bytes, shorter than its header)");
  Reader H(Bytes.substr(8, HeaderBytes - 8));
  uint32_t Version = H.pod<uint32_t>();
  H.pod<uint32_t>();
  uint64_t MetaSize = H.pod<uint64_t>();
  uint64_t WeightSize = H.pod<uint64_t>();
  uint64_t MetaSum = H.pod<uint64_t>();
  uint64_t WeightSum = H.pod<uint64_t>();
  if (Version != PlanFormatVersion)
    return planFileError("plan format version " + Twine(Version) +
                         " is not supported (this solder reads version " +
                         Twine(PlanFormatVersion) +
                         "): recompile the model with `solder compile`");
  // Sizes from the header are checked before any arithmetic on them.
  uint64_t Limit = uint64_t(1) << 48;
  if (MetaSize > Limit || WeightSize > Limit)
    return planFileError("plan file is corrupt (impossible section sizes)");
  if (Bytes.size() != weightsOffset(MetaSize) + WeightSize)
    return planFileError("plan file is truncated or has trailing bytes (" +
                         Twine(Bytes.size()) + " bytes, header says " +
                         Twine(weightsOffset(MetaSize) + WeightSize) + ")");
  StringRef Meta = Bytes.substr(HeaderBytes, MetaSize);
  StringRef Pad = Bytes.slice(HeaderBytes + MetaSize, weightsOffset(MetaSize));
  StringRef WeightBytes = Bytes.drop_front(weightsOffset(MetaSize));
  if (planChecksum(Meta) != MetaSum ||
      Pad.find_first_not_of('\0') != StringRef::npos ||
      planChecksum(WeightBytes) != WeightSum)
    return planFileError("plan file is corrupt (checksum mismatch)");

  Reader R(Meta);
  Plan P;
  P.ModelName = R.str();
  for (uint64_t I = 0, N = R.count(10); I < N; ++I)
    P.Inputs.push_back(R.tensor());
  for (uint64_t I = 0, N = R.count(10); I < N; ++I)
    P.Outputs.push_back(R.tensor());
  P.IrText = R.str();
  P.Arch = R.str();
  uint8_t Prec = R.pod<uint8_t>();
  if (Prec > uint8_t(Precision::BF16))
    R.Failed = true;
  P.Prec = Precision(Prec);
  P.TunedOn = R.str();
  for (uint64_t I = 0, N = R.count(40); I < N && !R.Failed; ++I) {
    PlanKernel K;
    K.Name = R.str();
    K.Source = R.str();
    K.Cubin = R.str();
    K.Symbol = R.str();
    K.Grid = readArr3(R);
    K.Block = readArr3(R);
    K.DynamicSharedBytes = R.pod<uint32_t>();
    for (uint64_t J = 0, M = R.count(8); J < M; ++J)
      K.NodeNames.push_back(R.str());
    K.Summary = R.str();
    K.GroupId = R.pod<int64_t>();
    K.DependentLaunch = R.pod<uint8_t>();
    K.Cooperative = R.pod<uint8_t>();
    for (uint64_t J = 0, M = R.count(37); J < M && !R.Failed; ++J) {
      PlanTensorMap T;
      T.Arg = R.pod<uint32_t>();
      T.Elem = R.dtype();
      T.Dims[0] = R.pod<int64_t>();
      T.Dims[1] = R.pod<int64_t>();
      T.RowBytes = R.pod<int64_t>();
      T.Box[0] = R.pod<uint32_t>();
      T.Box[1] = R.pod<uint32_t>();
      K.TensorMaps.push_back(T);
    }
    for (uint64_t J = 0, M = R.count(8); J < M && !R.Failed; ++J)
      K.Counts.push_back(R.pod<int64_t>());
    P.Kernels.push_back(std::move(K));
  }
  for (uint64_t I = 0, N = R.count(40); I < N && !R.Failed; ++I) {
    GemmConfig C;
    C.Elem = R.dtype();
    C.TransA = R.pod<uint8_t>();
    C.TransB = R.pod<uint8_t>();
    for (int64_t *V : {&C.M, &C.N, &C.K, &C.Lda, &C.Ldb, &C.Ldd, &C.Batch,
                       &C.StrideA, &C.StrideB, &C.StrideD})
      *V = R.pod<int64_t>();
    for (std::vector<int64_t> *V :
         {&C.BatchDims, &C.BatchStrideA, &C.BatchStrideB, &C.BatchStrideD})
      *V = R.podVec<int64_t>();
    // Pointer-array batches: one stride per dim and operand, dims that
    // multiply to the batch count (the runtime sizes its arrays by it).
    if (!C.BatchDims.empty()) {
      // Count stays <= Batch, so the product cannot overflow.
      int64_t Count = 1;
      bool Ok = C.Batch > 0;
      for (int64_t D : C.BatchDims) {
        if (!Ok || D <= 0 || Count > C.Batch / D) {
          Ok = false;
          break;
        }
        Count *= D;
      }
      size_t Rank = C.BatchDims.size();
      if (!Ok || Count != C.Batch || C.BatchStrideA.size() != Rank ||
          C.BatchStrideB.size() != Rank || C.BatchStrideD.size() != Rank)
        R.Failed = true;
    }
    C.Alpha = R.pod<float>();
    C.Beta = R.pod<float>();
    uint8_t Epi = R.pod<uint8_t>(), CFrom = R.pod<uint8_t>();
    if (Epi > uint8_t(GemmConfig::Epilogue::GeluBias) ||
        CFrom > uint8_t(GemmConfig::CSource::Separate))
      R.Failed = true;
    C.Epi = GemmConfig::Epilogue(Epi);
    C.CFrom = GemmConfig::CSource(CFrom);
    C.AllowTF32 = R.pod<uint8_t>();
    C.HasAlgo = R.pod<uint8_t>();
    for (uint64_t &X : C.AlgoData)
      X = R.pod<uint64_t>();
    C.AlgoWorkspace = R.pod<uint64_t>();
    C.A = R.ref();
    C.B = R.ref();
    C.BiasVec = R.ref();
    C.C = R.ref();
    C.D = R.ref();
    P.Gemms.push_back(C);
  }
  for (uint64_t I = 0, N = R.count(41); I < N && !R.Failed; ++I) {
    ConvConfig C;
    C.Elem = R.dtype();
    C.Transpose = R.pod<uint8_t>();
    C.Nhwc = R.pod<uint8_t>();
    C.XDims = R.podVec<int64_t>();
    C.WDims = R.podVec<int64_t>();
    C.YDims = R.podVec<int64_t>();
    C.Pads = R.podVec<int>();
    C.Strides = R.podVec<int>();
    C.Dilations = R.podVec<int>();
    C.Groups = R.pod<int32_t>();
    C.AllowTF32 = R.pod<uint8_t>();
    C.Algo = R.pod<int32_t>();
    C.MathType = R.pod<int32_t>();
    C.Fused = R.pod<uint8_t>();
    uint8_t Act = R.pod<uint8_t>();
    if (Act > uint8_t(ConvConfig::Activation::Relu))
      R.Failed = true;
    C.Act = ConvConfig::Activation(Act);
    C.HasZ = R.pod<uint8_t>();
    C.Alpha2 = R.pod<float>();
    C.X = R.ref();
    C.W = R.ref();
    C.Y = R.ref();
    C.Bias = R.ref();
    C.Z = R.ref();
    C.Graph = R.pod<uint8_t>();
    for (uint64_t J = 0, NT = R.count(58); J < NT && !R.Failed; ++J) {
      ConvGraphTensor T;
      uint8_t K = R.pod<uint8_t>();
      if (K > uint8_t(ConvGraphTensor::Kind::Output))
        R.Failed = true;
      T.K = ConvGraphTensor::Kind(K);
      T.Elem = R.dtype();
      for (int64_t &X : T.Dims)
        X = R.pod<int64_t>();
      for (int64_t &X : T.Strides)
        X = R.pod<int64_t>();
      T.ByValue = R.pod<float>();
      C.GraphTensors.push_back(T);
    }
    for (uint64_t J = 0, NO = R.count(25); J < NO && !R.Failed; ++J) {
      ConvGraphOp O;
      uint8_t M = R.pod<uint8_t>();
      if (M > ConvPointwiseLast)
        R.Failed = true;
      O.Mode = ConvPointwise(M);
      O.X = R.pod<int32_t>();
      O.B = R.pod<int32_t>();
      O.Y = R.pod<int32_t>();
      O.Lower = R.pod<float>();
      O.Upper = R.pod<float>();
      O.Slope = R.pod<float>();
      C.GraphOps.push_back(O);
    }
    for (uint64_t J = 0, NR = R.count(13); J < NR && !R.Failed; ++J)
      C.GraphReads.push_back(R.ref());
    C.GraphEngine = R.pod<int32_t>();
    if (C.GraphEngine < -1)
      R.Failed = true;
    P.Convs.push_back(std::move(C));
  }
  for (uint64_t I = 0, N = R.count(34); I < N && !R.Failed; ++I) {
    CopyConfig C;
    C.Src = R.ref();
    C.Dst = R.ref();
    C.Bytes = R.pod<uint64_t>();
    P.Copies.push_back(C);
  }
  for (uint64_t I = 0, N = R.count(321); I < N && !R.Failed; ++I) {
    AttentionConfig C;
    C.Elem = R.dtype();
    for (int64_t *X : {&C.Batch, &C.QHeads, &C.KvHeads, &C.QLen, &C.KvLen,
                       &C.HeadDim, &C.VHeadDim})
      *X = R.pod<int64_t>();
    for (auto *St : {&C.QStrides, &C.KStrides, &C.VStrides, &C.OStrides,
                     &C.BiasDims, &C.BiasStrides})
      for (int64_t &X : *St)
        X = R.pod<int64_t>();
    C.Scale = R.pod<float>();
    C.Causal = R.pod<uint8_t>();
    C.HasBias = R.pod<uint8_t>();
    C.BiasElem = R.dtype();
    C.Q = R.ref();
    C.K = R.ref();
    C.V = R.ref();
    C.Bias = R.ref();
    C.O = R.ref();
    P.Attentions.push_back(C);
  }
  for (uint64_t I = 0, N = R.count(29); I < N && !R.Failed; ++I) {
    PlanStep S;
    uint8_t K = R.pod<uint8_t>();
    if (K > uint8_t(PlanStep::Kind::Attention))
      R.Failed = true;
    S.K = PlanStep::Kind(K);
    S.Index = R.pod<uint32_t>();
    for (uint64_t J = 0, M = R.count(13); J < M; ++J)
      S.Args.push_back(R.ref());
    S.Label = R.str();
    S.GroupId = R.pod<int64_t>();
    P.Steps.push_back(std::move(S));
  }
  for (uint64_t I = 0, N = R.count(32); I < N && !R.Failed; ++I) {
    PlanBuffer B;
    B.Name = R.str();
    B.Offset = R.pod<uint64_t>();
    B.Bytes = R.pod<uint64_t>();
    B.FirstStep = R.pod<uint32_t>();
    B.LastStep = R.pod<uint32_t>();
    P.Buffers.push_back(std::move(B));
  }
  P.ArenaBytes = R.pod<uint64_t>();
  P.NaiveArenaBytes = R.pod<uint64_t>();
  P.ScratchBytes = R.pod<uint64_t>();
  auto Strings = [&]() {
    std::vector<std::string> V;
    for (uint64_t J = 0, M = R.count(8); J < M && !R.Failed; ++J)
      V.push_back(R.str());
    return V;
  };
  auto Values = [&]() {
    std::vector<PlanValue> V;
    for (uint64_t J = 0, M = R.count(30); J < M && !R.Failed; ++J) {
      PlanValue X;
      X.Name = R.str();
      X.Elem = R.dtype();
      X.Dims = R.podVec<int64_t>();
      X.Ref = R.ref();
      V.push_back(std::move(X));
    }
    return V;
  };
  for (uint64_t I = 0, N = R.count(56); I < N && !R.Failed; ++I) {
    PlanGroup G;
    G.Id = R.pod<int64_t>();
    G.Kind = R.str();
    G.Members = Strings();
    G.RunsAs = R.str();
    G.Steps = R.podVec<uint32_t>();
    G.Operands = Values();
    G.Results = Values();
    P.Groups.push_back(std::move(G));
  }
  for (uint64_t I = 0, N = R.count(33); I < N && !R.Failed; ++I) {
    DecisionRecord D;
    D.Pass = R.str();
    D.Node = R.str();
    D.OnnxName = R.str();
    D.Applied = R.pod<uint8_t>();
    D.Reason = R.str();
    P.Decisions.push_back(std::move(D));
  }
  if (R.Failed || !R.atEnd())
    return planFileError("plan file is corrupt (malformed payload)");
  if (Owner)
    P.Weights.append(WeightBytes, std::move(Owner));
  else
    P.Weights.appendCopy(WeightBytes);
  if (Error E = validatePlan(P))
    return std::move(E);
  return std::move(P);
}

Error emitToFile(StringRef Path, FileEmitter Emit, uint64_t SizeHint) {
  return writeAtomically(
      Path,
      [&](AtomicFileStream &OS) {
        Emit(OS, [&](ArrayRef<StringRef> Parts) { OS.writeGather(Parts); });
      },
      SizeHint);
}

Error writePlanFile(StringRef Path, const Plan &P) {
  std::string Meta = serializeMetadata(P);
  return emitToFile(
      Path,
      [&](raw_pwrite_stream &OS, PartWriter Write) {
        emitPlan(P, Meta, OS, Write);
      },
      weightsOffset(Meta.size()) + P.Weights.size());
}

void AtomicFileStream::writeGather(ArrayRef<StringRef> Parts) {
  flush(); // what the buffer holds comes first
  if (has_error())
    return;
  SmallVector<iovec, 32> V;
  for (StringRef P : Parts)
    if (!P.empty())
      V.push_back({const_cast<char *>(P.data()), P.size()});
  size_t At = 0; // the first segment not wholly written
  while (At < V.size()) {
    int N = int(std::min<size_t>(V.size() - At, IOV_MAX));
    ssize_t W = ::writev(get_fd(), V.data() + At, N);
    if (W < 0) {
      if (errno == EINTR || errno == EAGAIN)
        continue;
      error_detected(std::error_code(errno, std::generic_category()));
      return;
    }
    inc_pos(uint64_t(W));
    // A short write resumes inside the segment it stopped in.
    for (size_t Done = size_t(W); Done > 0;) {
      size_t Take = std::min(Done, V[At].iov_len);
      V[At].iov_base = static_cast<char *>(V[At].iov_base) + Take;
      V[At].iov_len -= Take;
      Done -= Take;
      if (V[At].iov_len == 0)
        ++At;
    }
  }
}

bool writesInPlace(StringRef Path) {
  sys::fs::file_status St;
  return !sys::fs::status(Path, St) && sys::fs::exists(St) &&
         !sys::fs::is_regular_file(St) && !sys::fs::is_directory(St);
}

/// Emit straight into an existing device or pipe.
static Error writeInPlace(StringRef Path,
                          function_ref<void(AtomicFileStream &)> Emit) {
  int FD;
  if (std::error_code EC =
          sys::fs::openFileForWrite(Path, FD, sys::fs::CD_OpenExisting))
    return planFileError("cannot open '" + Path + "': " + EC.message());
  // The header is written last, in place: a pipe is refused before any
  // byte goes into it.
  if (::lseek(FD, 0, SEEK_CUR) < 0) {
    ::close(FD);
    return planFileError("cannot write '" + Path +
                         "': the file format needs a seekable file");
  }
  AtomicFileStream OS(FD);
  Emit(OS);
  OS.close();
  if (!OS.has_error())
    return Error::success();
  std::string Why = OS.error().message();
  OS.clear_error();
  return planFileError("cannot write '" + Path + "': " + Why);
}

Error writeAtomically(StringRef Path,
                      function_ref<void(AtomicFileStream &)> Emit,
                      uint64_t SizeHint) {
  if (writesInPlace(Path))
    return writeInPlace(Path, Emit);
  // Temporary file in the same folder, then rename: readers see the old
  // file or the whole new one, never a partial write.
  SmallString<256> Temp;
  int FD;
  StringRef Dir = sys::path::parent_path(Path);
  SmallString<256> Model(Dir.empty() ? "." : Dir);
  sys::path::append(Model, sys::path::filename(Path) + ".tmp-%%%%%%");
  if (std::error_code EC = sys::fs::createUniqueFile(Model, FD, Temp))
    return planFileError("cannot create a temporary file beside '" + Path +
                         "': " + EC.message());
  // Interrupted (SIGINT, SIGTERM...), the temporary goes too; a SIGKILL
  // leaves it, never a partial file under Path.
  sys::RemoveFileOnSignal(Temp);
  auto Done = make_scope_exit([&] { sys::DontRemoveFileOnSignal(Temp); });
  // Reserving the blocks up front (past the end: the size still grows with
  // the writes) spares ext4 its per-block delayed allocation, about 15% of
  // the CPU time of writing ResNet-50's 97 MiB, and a full disk fails here,
  // before anything is written. Filesystems without fallocate just write.
  if (SizeHint > 0 &&
      ::fallocate(FD, FALLOC_FL_KEEP_SIZE, 0, off_t(SizeHint)) &&
      errno == ENOSPC) {
    ::close(FD);
    sys::fs::remove(Temp);
    return planFileError("cannot write '" + Path + "': no space left for " +
                         Twine(SizeHint) + " bytes");
  }
  {
    AtomicFileStream OS(FD);
    Emit(OS);
    OS.close();
    if (OS.has_error()) {
      OS.clear_error();
      sys::fs::remove(Temp);
      return planFileError("cannot write '" + Temp + "'");
    }
  }
  if (std::error_code EC = sys::fs::rename(Temp, Path)) {
    sys::fs::remove(Temp);
    return planFileError("cannot rename '" + Temp + "' to '" + Path +
                         "': " + EC.message());
  }
  return Error::success();
}

Expected<Plan> readPlanFile(StringRef Path) {
  // Always mapped, even when small: the weights section is page-aligned in
  // the file so the plan views it in place (no copy, page-aligned for the
  // upload). The sizes are still checked (ir/FileBytes.h).
  Expected<std::unique_ptr<MemoryBuffer>> Buf =
      readFileBytes(Path, "plan", /*MapAbove=*/0);
  if (!Buf)
    return Buf.takeError();
  std::shared_ptr<MemoryBuffer> File = std::move(*Buf);
  StringRef Bytes = File->getBuffer();
  Expected<Plan> P = deserializePlan(Bytes, std::move(File));
  if (!P)
    return planFileError("'" + Path + "': " + toString(P.takeError()));
  return P;
}

bool looksLikePlanFile(StringRef Path) {
  if (looksLikeDynamicPlanFile(Path))
    return true;
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buf =
      MemoryBuffer::getFileSlice(Path, sizeof(Magic), 0);
  return Buf && (*Buf)->getBufferSize() == sizeof(Magic) &&
         std::memcmp((*Buf)->getBufferStart(), Magic, sizeof(Magic)) == 0;
}

} // namespace solder
