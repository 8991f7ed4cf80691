//===- PrecisionConversion.cpp - fp32 graphs to fp16/bf16 -----------------===//
//
// One walk in graph order. Each node gets a compute type: the reduced type,
// or fp32 when the policy says so or when a float operand of a
// non-contraction node is already fp32 from such an op (an fp32 region
// extends through elementwise, reduction and data-movement ops until a
// contraction, which takes reduced operands: Exp -> ReduceSum -> Div of a
// decomposed softmax stays fp32 as a whole and never overflows in between).
// Operands of the other type get a Cast; constants are converted directly
// (each at most once per type), never through a Cast node. A non-contraction
// node with an fp32 constant beyond fp16's range (the -3.4e38 of additive
// attention masks) also computes in fp32 in fp16 plans, so the mask still
// swamps the scores through the Add and Softmax.
//
//===----------------------------------------------------------------------===//
#include "passes/PrecisionConversion.h"
#include "ir/OpRegistry.h"
#include "ir/Tensor.h"
#include "passes/Slices.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace solder {

namespace {

/// The bits of F.
uint32_t bitsOf(float F) {
  uint32_t U;
  std::memcpy(&U, &F, 4);
  return U;
}

/// Whether a float magnitude (its bits, sign cleared) is finite and above
/// the magnitude MaxBits: floats order like their magnitudes' bit patterns.
bool finiteAbove(uint32_t Abs, uint32_t MaxBits) {
  return Abs > MaxBits && Abs < 0x7f800000u;
}

/// Out[I] = the float at In + 4 I (any alignment) clamped to [-Max, Max]
/// (infinities and NaN pass) and rounded to T (F16 or BF16), the bits
/// floatToHalf / floatToBF16 give. The main loops work on the float's bits with
/// no branches or calls, so the compiler vectorizes them.
void reduceFloats(const char *In, uint16_t *Out, int64_t N, DType T,
                  float Max) {
  uint32_t MaxBits = bitsOf(Max);
  // Finite magnitudes above Max become Max.
  auto Clamped = [MaxBits](uint32_t Abs) {
    return finiteAbove(Abs, MaxBits) ? MaxBits : Abs;
  };
  if (T == DType::BF16) {
    for (int64_t I = 0; I < N; ++I) {
      uint32_t U;
      std::memcpy(&U, In + 4 * I, 4);
      uint32_t Abs = Clamped(U & 0x7fffffffu);
      uint32_t V = (U & 0x80000000u) | Abs;
      uint32_t Rounded = (V + 0x7fffu + ((V >> 16) & 1u)) >> 16;
      Out[I] = uint16_t(Abs > 0x7f800000u ? (V >> 16) | 0x40u : Rounded);
    }
    return;
  }
  // Blocks of 64: the vectorized loop also notes whether a block holds a
  // subnormal half (|x| < 2^-14, a few weights in a thousand), and only
  // such blocks are redone exactly. A second scalar pass over everything
  // looking for them was 30% of the conversion.
  constexpr int64_t Block = 64;
  for (int64_t B = 0; B < N; B += Block) {
    int64_t E = std::min(N, B + Block);
    uint32_t AnySubnormal = 0;
    for (int64_t I = B; I < E; ++I) {
      uint32_t U;
      std::memcpy(&U, In + 4 * I, 4);
      uint32_t Abs = Clamped(U & 0x7fffffffu);
      // A normal half: rebias the exponent, round to nearest even (the 13
      // dropped bits plus 0xfff plus the kept last bit carry into bit 13
      // exactly when they round up).
      uint32_t H = (Abs >> 13) - (112u << 10);
      H += ((Abs & 0x1fffu) + 0xfffu + (H & 1u)) >> 13;
      // Overflow and infinity to infinity, NaN to the quiet NaN.
      uint32_t Special = Abs > 0x7f800000u ? 0x7e00u : 0x7c00u;
      H = Abs >= 0x477ff000u ? Special : H;
      Out[I] = uint16_t((U >> 16 & 0x8000u) | H);
      AnySubnormal |= uint32_t(Abs < 0x38800000u);
    }
    if (!AnySubnormal)
      continue;
    for (int64_t I = B; I < E; ++I) {
      float V;
      std::memcpy(&V, In + 4 * I, 4);
      if (std::fabs(V) < 6.103515625e-05f)
        Out[I] = floatToHalf(V);
    }
  }
}

/// reduceFloats over N values, in slices on several threads when N is
/// large (BERT-base converts 110M weights per compile, and again for every
/// shape variant of a dynamic model). The bits do not depend on the split.
void reduceFloatsParallel(const char *In, uint16_t *Out, int64_t N, DType T,
                          float Max) {
  constexpr int64_t Slice = int64_t(1) << 18;
  forEachSlice(N,
               hardwareThreads(std::min<int64_t>(16, (N + Slice - 1) / Slice)),
               [&](int64_t Begin, int64_t End) {
                 reduceFloats(In + 4 * Begin, Out + Begin, End - Begin, T, Max);
               });
}

const PrecisionRule Policy[] = {
    {OpKind::Exp, true,
     "exp(x) leaves fp16's range above x = 11.1: results stay fp32"},
    {OpKind::Pow, true,
     "powers leave fp16's range for moderate bases (300^2 > 65504): results "
     "stay fp32"},
    {OpKind::ReduceSum, true,
     "a sum over a long row leaves fp16's range (4096 values of 20): results "
     "stay fp32"},
    {OpKind::ReduceSumSquare, true,
     "a sum of squares leaves fp16's range sooner than ReduceSum's sum: "
     "results stay fp32"},
    {OpKind::ReduceL1, true,
     "a sum of magnitudes leaves fp16's range as ReduceSum's does: results "
     "stay fp32"},
    {OpKind::ReduceProd, true,
     "a product of a few dozen values of 2 leaves fp16's range: results stay "
     "fp32"},
    {OpKind::Sinh, true,
     "sinh(x) leaves fp16's range above |x| = 11.8: results stay fp32"},
    {OpKind::Cosh, true,
     "cosh(x) leaves fp16's range above |x| = 11.8: results stay fp32"},
    {OpKind::CumSum, true,
     "running sums over a long axis leave fp16's range, as ReduceSum's do: "
     "results stay fp32"},
    {OpKind::Softmax, false,
     "computed in fp32 inside its kernel (max, exp, sum); the probabilities "
     "are stored reduced"},
    {OpKind::LogSoftmax, false, "computed in fp32 inside its kernel"},
    {OpKind::Attention, false,
     "scores, softmax and the weighted sum in fp32 inside its kernel; Q, K, "
     "V, the mask and the result are stored reduced"},
    {OpKind::LayerNormalization, false,
     "mean and variance in fp32 inside its kernel (two-pass); the "
     "normalised row is stored reduced"},
    {OpKind::RMSNormalization, false, "mean square in fp32 inside its kernel"},
    {OpKind::ApplyRowStats, false,
     "computed in fp32 inside the kernel; its statistics are fp32 (a "
     "deferred LayerNorm's, made after this pass)"},
    {OpKind::ReduceMean, false, "accumulates in fp32 inside its kernel"},
    {OpKind::ReduceL2, false,
     "sums squares in fp32 inside its kernel; the root fits the reduced "
     "type"},
    {OpKind::ReduceLogSum, false, "sums in fp32 inside its kernel"},
    {OpKind::ReduceLogSumExp, false,
     "max-shifted exp sums in fp32 inside its kernel"},
    {OpKind::Resize, false,
     "tap weights and sums in fp32 inside its kernel; the result is stored "
     "reduced"},
    {OpKind::Erf, false, "erf (and GELU's erf) in fp32 inside the kernel"},
    {OpKind::Gelu, false,
     "computed in fp32 inside the kernel; right after a matmul, cuBLASLt's "
     "GELU epilogue (tanh form, at most 4.7e-4 from erf's)"},
    {OpKind::Log, false, "computed in fp32 inside the kernel"},
    {OpKind::MatMul, false,
     "cuBLASLt with reduced inputs and outputs, fp32 accumulation "
     "(CUBLAS_COMPUTE_32F)"},
    {OpKind::Gemm, false, "cuBLASLt, fp32 accumulation"},
    {OpKind::Conv, false, "cuDNN, fp32 accumulation"},
    {OpKind::ConvTranspose, false, "cuDNN, fp32 accumulation"},
};

const PrecisionRule *ruleFor(OpKind K) {
  for (const PrecisionRule &R : Policy)
    if (R.Kind == K)
      return &R;
  return nullptr;
}

/// The largest finite value of T.
double largestFinite(DType T) {
  return T == DType::F16 ? 65504.0 : 3.3895313892515355e38;
}

/// Whether V is an fp32 constant holding a finite value beyond fp16's
/// range. Clamped to -65504, the additive attention mask's -3.4e38 no
/// longer swamps the scores it is added to in a kernel that adds in fp32
/// (a fully padded sequence would attend as if unmasked instead of
/// uniformly), so its users compute in fp32. bf16 reaches 3.39e38: its
/// clamp keeps the swamping.
bool beyondHalfRange(const Value *V, DType Reduced) {
  if (Reduced != DType::F16 || !V || !V->isConstant() ||
      V->dtype() != DType::F32)
    return false;
  // On the bits, branch-free (vectorized), where the bytes are: BERT's
  // word embeddings (23M values, read by a Gather) come through here.
  const char *X = V->constant()->bytes().data();
  uint32_t MaxBits = bitsOf(float(largestFinite(DType::F16)));
  uint32_t Beyond = 0;
  for (int64_t I = 0, N = V->constant()->numElements(); I < N; ++I) {
    uint32_t U;
    std::memcpy(&U, X + 4 * I, 4);
    Beyond |= finiteAbove(U & 0x7fffffffu, MaxBits) ? 1u : 0u;
  }
  return Beyond != 0;
}

bool isFloatData(const Value *V, DType Reduced) {
  return V && (V->dtype() == DType::F32 || V->dtype() == Reduced);
}

class Converter {
public:
  Converter(Graph &G, DType T, DecisionLog &Log, ReducedWeightCache *Cache)
      : G(G), T(T), Log(Log), Cache(Cache) {}

  /// A reduced copy of the fp32 constant C (clamped to the finite range).
  Value *reducedConstant(Value *C) {
    auto [It, New] = Reduced.try_emplace(C, nullptr);
    if (!New)
      return It->second;
    const Tensor &Src = *C->constant();
    auto Make = [&] { return std::make_shared<const Tensor>(reduce(Src)); };
    It->second =
        G.addConstant(G.uniqueName(C->name() + "." + dtypeName(T).str()),
                      Cache ? Cache->reduced(Src, T, Make) : Make());
    Changed = true;
    return It->second;
  }

  /// Src in the reduced type.
  Tensor reduce(const Tensor &Src) const {
    bool Fast = Src.dtype() == DType::F32 && T != DType::F32;
    // The fast path writes every element.
    Tensor Dst =
        Fast ? Tensor::uninitialized(T, Src.dims()) : Tensor(T, Src.dims());
    int64_t N = Src.numElements();
    if (Fast) {
      // The bytes where they are (a mapped model's raw_data need not be
      // 4-byte aligned: data<float>() would first copy them all, on this
      // thread).
      reduceFloatsParallel(Src.bytes().data(), Dst.mutableData<uint16_t>(), N,
                           T, float(largestFinite(T)));
    } else {
      double Max = largestFinite(T);
      for (int64_t I = 0; I < N; ++I) {
        double V = Src.getDouble(I);
        if (std::isfinite(V))
          V = std::max(-Max, std::min(Max, V));
        Dst.setDouble(I, V);
      }
    }
    return Dst;
  }

  /// beyondHalfRange(V, T), through the cache for a constant.
  bool beyondRange(const Value *V) {
    if (!Cache || !V || !V->isConstant())
      return beyondHalfRange(V, T);
    return Cache->flag(*V->constant(), T,
                       [&] { return beyondHalfRange(V, T); });
  }

  /// A new Cast node of V to To, placed before Before.
  Node *makeCast(Value *V, DType To, Node *Before) {
    Node *C =
        G.insertNode(G.iteratorOf(Before), OpKind::Cast, {V},
                     {G.uniqueName(V->name() + "." + dtypeName(To).str())}, "");
    C->attrs().set("to", Attribute(int64_t(onnxDTypeCode(To))));
    llvm::cantFail(inferNodeTypes(*C));
    Inserted.insert(C);
    Changed = true;
    return C;
  }

  /// A Cast of V to To, placed before Before (one per value and type).
  Value *castBefore(Value *V, DType To, Node *Before) {
    auto [It, New] = Casts.try_emplace({V, unsigned(To)}, nullptr);
    if (New)
      It->second = makeCast(V, To, Before)->result(0);
    return It->second;
  }

  /// Replaces every use of V by a Cast of V to To placed right after V is
  /// defined (before First, its first user).
  void castAllUses(Value *V, DType To, Node *First) {
    Node *C = makeCast(V, To, First);
    std::vector<Use> Uses(V->uses().begin(), V->uses().end());
    for (const Use &U : Uses)
      if (U.User != C)
        U.User->setOperand(U.OperandIndex, C->result(0));
  }

  llvm::Error convertNode(Node &N) {
    if (Inserted.count(&N))
      return llvm::Error::success();
    if (N.body())
      return makeError(N.describe() +
                       ": precision-conversion runs before the fusion passes");
    FusionKind K = getOpInfo(N.kind()).Fusion;
    const PrecisionRule *R = ruleFor(N.kind());
    bool WideOperand = llvm::any_of(
        N.operands(), [&](const Value *V) { return V && Wide.count(V); });
    bool HugeConstant = K != FusionKind::Contraction &&
                        llvm::any_of(N.operands(), [&](const Value *V) {
                          return beyondRange(V);
                        });
    bool F32 = (R && R->F32Storage) ||
               (K != FusionKind::Contraction && WideOperand) || HugeConstant;
    DType C = F32 ? DType::F32 : T;
    if (R && R->F32Storage) {
      Decision D = Decision::yes();
      D.Reason = std::string("kept in fp32: ") + R->Reason;
      Log.note(N, D);
    } else if (HugeConstant) {
      Decision D = Decision::yes();
      D.Reason = "kept in fp32: a constant operand beyond fp16's range (an "
                 "additive mask's -3.4e38 would be clamped to -65504 and no "
                 "longer swamp the scores)";
      Log.note(N, D);
    }
    if (N.kind() == OpKind::Cast) {
      // A cast to fp32 in the model casts to the plan's float type.
      std::optional<DType> To =
          dtypeFromOnnx(N.attrs().getInt("to", onnxDTypeCode(DType::F32)));
      if (To == DType::F32 && C != DType::F32) {
        N.attrs().set("to", Attribute(int64_t(onnxDTypeCode(C))));
        Changed = true;
      }
    }
    for (unsigned I = 0; I < N.numOperands(); ++I) {
      Value *V = N.operand(I);
      if (!isFloatData(V, T) || V->dtype() == C)
        continue;
      if (V->isConstant() && V->dtype() == DType::F32) {
        N.setOperand(I, reducedConstant(V));
        continue;
      }
      if (N.kind() == OpKind::Cast)
        continue; // a Cast reads any type
      N.setOperand(I, castBefore(V, C, &N));
    }
    if (llvm::Error E = inferNodeTypes(N))
      return E;
    for (Value *Res : N.results()) {
      if (!Res || Res->dtype() != DType::F32)
        continue;
      if (C == DType::F32) {
        Wide.insert(Res);
        continue;
      }
      // A result typed by an attribute (ConstantOfShape's value, ...):
      // reduced for its users.
      auto Next = std::next(G.iteratorOf(&N));
      if (Next != G.nodes().end())
        castAllUses(Res, T, Next->get());
    }
    return llvm::Error::success();
  }

  Graph &G;
  DType T;
  DecisionLog &Log;
  ReducedWeightCache *Cache;
  llvm::DenseMap<Value *, Value *> Reduced;
  /// Casts made so far, by value and target type (fp32 or reduced).
  llvm::DenseMap<std::pair<Value *, unsigned>, Value *> Casts;
  llvm::DenseSet<const Node *> Inserted;
  llvm::DenseSet<const Value *> Wide;
  bool Changed = false;
};

} // namespace

ReducedWeightCache::Entry *ReducedWeightCache::find(const Tensor &Src,
                                                    DType T) {
  llvm::StringRef B = Src.bytes();
  if (B.empty() || B.begin() < Range.begin() || B.end() > Range.end())
    return nullptr;
  return &Entries[{size_t(B.begin() - Range.begin()), B.size(), Src.dtype(),
                   T}];
}

std::shared_ptr<const Tensor> ReducedWeightCache::reduced(
    const Tensor &Src, DType T,
    llvm::function_ref<std::shared_ptr<const Tensor>()> Make) {
  std::lock_guard<std::mutex> Lock(Mu);
  Entry *E = find(Src, T);
  if (!E)
    return Make();
  if (!E->Reduced)
    E->Reduced = Make();
  // The same bytes may be viewed with other dims by another constant.
  if (E->Reduced->dims() == Src.dims())
    return E->Reduced;
  return std::make_shared<const Tensor>(E->Reduced->reshaped(Src.dims()));
}

bool ReducedWeightCache::flag(const Tensor &Src, DType T,
                              llvm::function_ref<bool()> Test) {
  std::lock_guard<std::mutex> Lock(Mu);
  Entry *E = find(Src, T);
  if (!E)
    return Test();
  if (!E->Flag)
    E->Flag = Test();
  return *E->Flag;
}

std::shared_ptr<const Tensor>
ReducedWeightCache::derived(llvm::StringRef Tag,
                            llvm::ArrayRef<const Tensor *> Parts,
                            llvm::function_ref<Tensor()> Make) {
  std::string Key = Tag.str();
  for (const Tensor *P : Parts) {
    Key += formatv("|{0:x}:{1}:{2}", uintptr_t(P->bytes().data()),
                   P->bytes().size(), dtypeName(P->dtype()))
               .str();
    for (int64_t D : P->dims())
      Key += "," + std::to_string(D);
  }
  std::lock_guard<std::mutex> Lock(Mu);
  auto [It, New] = DerivedEntries.try_emplace(Key);
  if (New) {
    It->second.Value = std::make_shared<const Tensor>(Make());
    for (const Tensor *P : Parts)
      It->second.Parts.push_back(P->keepAlive());
  }
  return It->second.Value;
}

size_t ReducedWeightCache::size() const {
  std::lock_guard<std::mutex> Lock(Mu);
  return Entries.size() + DerivedEntries.size();
}

llvm::ArrayRef<PrecisionRule> precisionPolicy() { return Policy; }

llvm::Expected<bool> PrecisionConversion::run(Graph &G, DecisionLog &Log) {
  DType T = storageDType(Target);
  if (T == DType::F32)
    return false;
  Converter C(G, T, Log, Cache);
  std::vector<Value *> F32Outputs;
  for (Value *V : G.outputs())
    F32Outputs.push_back(V && V->dtype() == DType::F32 ? V : nullptr);

  // Model inputs take the reduced type, or keep fp32 and are cast (once)
  // before their first user that computes reduced.
  if (!KeepModelIo)
    for (Value *V : G.inputs())
      if (V->dtype() == DType::F32) {
        V->setType(TensorType(T, V->type().Dims));
        C.Changed = true;
      }

  std::vector<Node *> Order;
  for (auto &N : G.nodes())
    Order.push_back(N.get());
  for (Node *N : Order)
    if (llvm::Error E = C.convertNode(*N))
      return std::move(E);

  // Model outputs: back to their declared fp32, or the reduced type.
  for (unsigned J = 0; J < G.outputs().size(); ++J) {
    Value *V = G.outputs()[J];
    if (!F32Outputs[J] || !V)
      continue;
    DType Want = KeepModelIo ? DType::F32 : T;
    if (V->dtype() == Want)
      continue;
    if (V->isConstant()) {
      if (V->dtype() == DType::F32)
        G.setOutput(J, C.reducedConstant(V));
      continue;
    }
    std::string Name = V->name();
    Node *Cast = G.addNode(OpKind::Cast, {V}, {G.uniqueName(Name + ".out")});
    Cast->attrs().set("to", Attribute(int64_t(onnxDTypeCode(Want))));
    if (llvm::Error E = inferNodeTypes(*Cast))
      return std::move(E);
    // The output keeps its name: the renamed value is the internal one.
    G.renameValue(V, G.uniqueName(Name + "." + dtypeName(V->dtype()).str()));
    G.renameValue(Cast->result(0), Name);
    G.setOutput(J, Cast->result(0));
    C.Changed = true;
  }
  G.removeUnusedConstants();
  return C.Changed;
}

} // namespace solder
