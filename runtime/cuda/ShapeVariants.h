//===- ShapeVariants.h - Dynamic shapes as per-shape variants ---*- C++ -*-===//
//
// A model compiled with input ranges (`--shape input_ids=1..32x8..512`)
// serves every shape in them. Design: each concrete shape a run asks for is
// compiled into a variant, a static CompiledModel of that shape, and
//   - its kernels take the lengths that vary as parameters (the outermost
//     loop's count, GeneratedKernel::Counts; attention's sequence lengths,
//     a row kernel's rows per sequence, CodegenOptions::ShapeParams), so
//     variants at other batch sizes and sequence lengths run the same
//     kernel texts and NVRTC's disk cache serves them; within a variant
//     the kernels identical but for their names compile once;
//   - the model is mapped once and every variant imports from that mapping,
//     so precision conversion finds the weights an earlier variant
//     converted (ReducedWeightCache) by their place in the file, and
//     horizontal-matmul-fusion the weights it packed from them;
//   - variants share the device weights: a DeviceWeightPool uploads each
//     distinct constant once (keyed by size and two 64-bit content hashes,
//     and by address for bytes it holds), so a new shape uploads only the
//     few constants that depend on it;
//   - an execution context keeps, per shape, the variant's context with its
//     captured CUDA graph, in an LRU of CompileOptions::MaxShapeVariants;
//     all of them use one device block sized for the largest variant seen
//     (the max shape's, compiled eagerly), plus input/output buffers sized
//     for the max shape, so switching shapes allocates nothing.
// The cost is the first run of a new shape: the pass pipeline, plan
// building, library configuration and graph capture (measured by `solder
// bench --run-shape`: 30-64 ms for BERT-base fp16 on an H100).
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_RUNTIME_CUDA_SHAPEVARIANTS_H
#define SOLDER_RUNTIME_CUDA_SHAPEVARIANTS_H

#include "passes/PrecisionConversion.h"
#include "runtime/cuda/DynamicPlanFile.h"
#include "solder/Solder.h"
#include "llvm/Support/MemoryBuffer.h"
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

typedef struct CUevent_st *cudaEvent_t;

namespace solder {

/// Device copies of constants, each distinct byte string once, shared by
/// the variants of one dynamic model. Thread-safe.
class DeviceWeightPool {
public:
  ~DeviceWeightPool();
  /// The device copy of Bytes, uploaded now when it is new. With Owner
  /// (what keeps Bytes alive), the pool holds it and knows the bytes by
  /// their address from then on: a later variant whose piece is the same
  /// host bytes (weights of the model file, or converted once for all
  /// variants) is not hashed again (BERT-base: 220 MB).
  llvm::Expected<const void *> get(llvm::StringRef Bytes,
                                   std::shared_ptr<const void> Owner = {});
  uint64_t bytes() const;

private:
  struct Key {
    uint64_t Size, H1, H2;
    bool operator<(const Key &O) const {
      return std::tie(Size, H1, H2) < std::tie(O.Size, O.H1, O.H2);
    }
  };
  struct Held {
    void *Ptr;
    std::shared_ptr<const void> Owner;
  };
  mutable std::mutex Mu;
  std::map<Key, void *> Ptrs;
  /// By host address and size, for bytes whose owner is held.
  std::map<std::pair<const char *, size_t>, Held> Places;
  uint64_t Total = 0;
};

/// The variants of one dynamic model, by concrete input shape.
class ShapeVariants {
public:
  /// Validates Opts.InputRanges against the model (Path, else Bytes) and
  /// compiles the max-shape variant.
  static llvm::Expected<std::unique_ptr<ShapeVariants>>
  create(std::string Path, std::string Bytes, const CompileOptions &Opts);

  llvm::ArrayRef<TensorInfo> inputs() const { return Inputs; }
  llvm::ArrayRef<TensorInfo> outputs() const { return Outputs; }
  /// The variant at every range's Max (kept for the model's lifetime).
  const std::shared_ptr<CompiledModel> &maxVariant() const { return Max; }
  /// An error naming the input and dim when Dims is not in the ranges,
  /// or when dims of one symbol disagree.
  llvm::Error check(llvm::ArrayRef<std::vector<int64_t>> Dims) const;
  llvm::Error checkInput(unsigned Index, llvm::ArrayRef<int64_t> Dims) const;
  /// Per dim of input Index: the (input, dim) whose size it takes (the
  /// first ranged dim of its symbol; itself when untied).
  llvm::ArrayRef<std::pair<unsigned, unsigned>> tiedTo(unsigned Index) const;
  /// The variant for Dims (checked), compiled now when not kept.
  llvm::Expected<std::shared_ptr<CompiledModel>>
  get(llvm::ArrayRef<std::vector<int64_t>> Dims);
  size_t compiled() const;
  unsigned capacity() const { return Opts.MaxShapeVariants; }
  ExecutionBackend backend() const { return Opts.Backend; }
  const std::shared_ptr<DeviceWeightPool> &pool() const { return Pool; }

  /// What a dynamic plan file holds: the model's bytes and the options
  /// with the ranges; an error when the bytes alone do not import (a model
  /// with external data).
  llvm::Expected<DynamicPlan> toPlan() const;

  /// "2x128,2x128": the key of a shape (one entry per input).
  static std::string key(llvm::ArrayRef<std::vector<int64_t>> Dims);

private:
  llvm::Expected<std::shared_ptr<CompiledModel>>
  compile(llvm::ArrayRef<std::vector<int64_t>> Dims) const;

  std::string Path;
  /// The model's bytes, mapped (or copied from the bytes given) once:
  /// every variant imports them with its constants viewing them, so
  /// Weights recognises the same weights by their place.
  std::shared_ptr<llvm::MemoryBuffer> Model;
  std::unique_ptr<ReducedWeightCache> Weights;
  CompileOptions Opts;
  llvm::StringMap<std::vector<DimRange>> GivenRanges;
  std::vector<std::string> InputNames;
  std::vector<std::vector<std::pair<unsigned, unsigned>>> Source;
  std::vector<TensorInfo> Inputs, Outputs;
  std::shared_ptr<CompiledModel> Max;
  std::shared_ptr<DeviceWeightPool> Pool;
  mutable std::mutex Mu;
  /// Most recently used first.
  std::list<std::pair<std::string, std::shared_ptr<CompiledModel>>> Lru;
  size_t Compiles = 0;
};

/// The per-shape state of one execution context of a dynamic model.
class DynamicContext {
public:
  DynamicContext(std::shared_ptr<CompiledModel> Model, ShapeVariants &SV);
  ~DynamicContext();
  /// Allocates the input/output buffers and the shared block (cuda).
  llvm::Error init();

  llvm::Error setInputShape(unsigned Index, llvm::ArrayRef<int64_t> Dims);
  llvm::Expected<std::vector<int64_t>> inputDims(unsigned Index) const;
  llvm::Expected<std::vector<int64_t>> outputDims(unsigned Index);
  llvm::Error bindInput(unsigned Index, const void *Ptr);
  llvm::Error bindOutput(unsigned Index, void *Ptr);
  const void *inputBuffer(unsigned Index) const;
  void *outputBuffer(unsigned Index) const;
  llvm::Error copyInputFromHost(unsigned Index, const void *Host, size_t Bytes,
                                cudaStream_t Stream);
  llvm::Error copyOutputToHost(unsigned Index, void *Host, size_t Bytes,
                               cudaStream_t Stream);
  llvm::Error run(cudaStream_t Stream);
  llvm::Expected<std::vector<Tensor>> runHost(llvm::ArrayRef<Tensor> Inputs,
                                              cudaStream_t Stream);
  /// The context of the current shape (created, bound and ready to run):
  /// what runStepByStep, timeSteps and readBuffer go through.
  llvm::Expected<ExecutionContext *> current();
  void setUseCudaGraph(bool On);
  bool usesCudaGraph() const { return UseGraph; }
  uint64_t graphLaunches() const;
  llvm::StringRef cudaGraphFailure() const;

private:
  struct Entry {
    std::string Key;
    std::shared_ptr<CompiledModel> Variant;
    std::unique_ptr<ExecutionContext> Ctx;
  };
  llvm::Expected<Entry *> entry();
  size_t bytesOf(const TensorInfo &T, llvm::ArrayRef<int64_t> Dims) const;
  llvm::Error growOutputs(const CompiledModel &Variant);

  std::shared_ptr<CompiledModel> Model; ///< keeps SV alive
  ShapeVariants &SV;
  std::vector<std::vector<int64_t>> InDims;
  char *InBlock = nullptr, *OutBlock = nullptr, *Shared = nullptr;
  uint64_t SharedBytes = 0;
  std::vector<char *> OwnIn, OwnOut;
  std::vector<uint64_t> OutSlot;
  std::vector<const void *> InBind;
  std::vector<void *> OutBind;
  std::list<Entry> Lru; ///< most recently used first
  bool UseGraph = true;
  uint64_t DroppedLaunches = 0;
  cudaStream_t Own = nullptr;
  cudaEvent_t Before = nullptr, After = nullptr;
};

/// How a dynamic model's variant compiles differently from a static plan.
struct VariantOptions {
  /// Where precision conversion keeps converted weights, and
  /// horizontal-matmul-fusion packed ones, across variants.
  ReducedWeightCache *Weights = nullptr;
  /// Kernels take the lengths that vary as parameters
  /// (CodegenOptions::ShapeParams).
  bool ShapeParams = true;
};

/// Runtime internals the dynamic layer needs (CompiledModel.cpp).
struct RuntimeAccess {
  /// The process-wide lock that CUDA graph captures, lazy loading and
  /// device frees take (RuntimeImpl.h, lazyLoadMutex).
  static std::mutex &captureMutex();
  static std::shared_ptr<CompiledModel>
  wrapDynamic(std::unique_ptr<ShapeVariants> SV);
  /// The variant reads its weights from Pool instead of its own buffer.
  static void useWeightPool(CompiledModel &Variant,
                            std::shared_ptr<DeviceWeightPool> Pool);
  /// The device block a context of Variant needs without its own input and
  /// output buffers (loads Variant onto the device first).
  static llvm::Expected<uint64_t> contextBlockBytes(CompiledModel &Variant);
  /// A context of Variant whose arena, workspace and tables live in Block
  /// (at least contextBlockBytes); inputs/outputs must be bound.
  static llvm::Expected<std::unique_ptr<ExecutionContext>>
  createContextIn(CompiledModel &Variant, char *Block, uint64_t Bytes);
  /// CompiledModel::compileGraph (either form), as a dynamic model's
  /// variant where Variant is set.
  static llvm::Expected<std::shared_ptr<CompiledModel>>
  compileWith(std::unique_ptr<Graph> G, const CompileOptions &Opts,
              const VariantOptions *Variant);
  static llvm::Expected<std::shared_ptr<CompiledModel>>
  compileWith(Graph &G, const CompileOptions &Opts,
              const VariantOptions *Variant);
  /// The model in Bytes (kept alive by Owner; Path names it, may be empty)
  /// imported with constants viewing the bytes, then compileWith.
  static llvm::Expected<std::shared_ptr<CompiledModel>>
  compileShared(llvm::StringRef Bytes, std::shared_ptr<const void> Owner,
                llvm::StringRef Path, const CompileOptions &Opts,
                const VariantOptions &Variant);
};

} // namespace solder

#endif
