//===- Module.cpp - solder._solder, the native half of the Python module --===//
//
// A thin layer over the C++ API (include/solder/Solder.h): compile, load a
// plan, describe and save a model, create contexts and run them. Argument
// normalization (dicts, output allocation, stream lookup) is in
// solder/__init__.py; everything here takes plain lists and ints.
//
// Written against CPython's stable ABI (3.11+) rather than a binding
// library, so one `_solder.abi3.so` built on Debian 12 (Python 3.11) also
// imports on the Python 3.12 of a GPU machine. The GIL is released around
// compiling and running; a per-context mutex keeps one run per context at
// a time (the C++ contract), taken only after the GIL is released so a
// waiting thread never blocks the interpreter.
//
// The type and exception objects are module-level statics: the module
// initializes once per process (single-phase initialization).
//
//===----------------------------------------------------------------------===//
#include "Operand.h"
#include "solder/Solder.h"
#include "llvm/Support/Error.h"
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

using namespace solder;
using namespace solder::python;

namespace {

struct ModelObject {
  PyObject_HEAD;
  std::shared_ptr<CompiledModel> *Model;
};

struct ContextObject {
  PyObject_HEAD;
  std::unique_ptr<ExecutionContext> *Context;
  std::mutex *RunLock;
};

PyObject *ModelType = nullptr;
PyObject *ContextType = nullptr;

/// Fn() with the GIL released (it must not touch Python objects).
template <typename F> auto withoutGil(F Fn) {
  PyThreadState *State = PyEval_SaveThread();
  auto Result = Fn();
  PyEval_RestoreThread(State);
  return Result;
}

/// Raises SolderError with the message of E; returns null for `return`.
PyObject *raise(llvm::Error E) {
  raiseSolderError(llvm::toString(std::move(E)));
  return nullptr;
}

template <typename T> T *allocObject(PyObject *Type) {
  auto Alloc = reinterpret_cast<allocfunc>(
      PyType_GetSlot(reinterpret_cast<PyTypeObject *>(Type), Py_tp_alloc));
  return reinterpret_cast<T *>(
      Alloc(reinterpret_cast<PyTypeObject *>(Type), 0));
}

void freeObject(PyObject *Self) {
  PyTypeObject *Type = Py_TYPE(Self);
  auto Free = reinterpret_cast<freefunc>(PyType_GetSlot(Type, Py_tp_free));
  Free(Self);
  Py_DECREF(reinterpret_cast<PyObject *>(Type)); // heap types own a ref
}

PyObject *wrapModel(std::shared_ptr<CompiledModel> M) {
  auto *O = allocObject<ModelObject>(ModelType);
  if (O)
    O->Model = new std::shared_ptr<CompiledModel>(std::move(M));
  return reinterpret_cast<PyObject *>(O);
}

CompiledModel &model(PyObject *Self) {
  return **reinterpret_cast<ModelObject *>(Self)->Model;
}

/// A str argument as UTF-8, or null with TypeError set.
const char *utf8(PyObject *Obj, const char *What) {
  if (!PyUnicode_Check(Obj)) {
    PyErr_Format(PyExc_TypeError, "%s must be a str", What);
    return nullptr;
  }
  return PyUnicode_AsUTF8AndSize(Obj, nullptr);
}

bool readStrings(PyObject *List, std::vector<std::string> &Out,
                 const char *What) {
  if (!PyList_Check(List)) {
    PyErr_Format(PyExc_TypeError, "%s must be a list of str", What);
    return false;
  }
  for (Py_ssize_t I = 0; I < PyList_Size(List); ++I) {
    const char *S = utf8(PyList_GetItem(List, I), What);
    if (!S)
      return false;
    Out.push_back(S);
  }
  return true;
}

bool readDims(PyObject *Seq, std::vector<int64_t> &Dims) {
  if (!PyTuple_Check(Seq)) {
    PyErr_SetString(PyExc_TypeError, "a shape must be a tuple of int");
    return false;
  }
  for (Py_ssize_t I = 0; I < PyTuple_Size(Seq); ++I) {
    long long D = PyLong_AsLongLong(PyTuple_GetItem(Seq, I));
    if (D == -1 && PyErr_Occurred())
      return false;
    Dims.push_back(D);
  }
  return true;
}

/// (name, dtype name, dims) per tensor.
PyObject *describe(llvm::ArrayRef<TensorInfo> Tensors) {
  PyObject *List = PyList_New(Py_ssize_t(Tensors.size()));
  for (size_t K = 0; List && K < Tensors.size(); ++K) {
    const TensorInfo &T = Tensors[K];
    PyObject *Dims = PyTuple_New(Py_ssize_t(T.Dims.size()));
    for (size_t D = 0; Dims && D < T.Dims.size(); ++D)
      PyTuple_SetItem(Dims, Py_ssize_t(D), PyLong_FromLongLong(T.Dims[D]));
    std::string Elem = dtypeName(T.Elem).str();
    PyObject *Item =
        Dims ? Py_BuildValue("(ssN)", T.Name.c_str(), Elem.c_str(), Dims)
             : nullptr;
    if (!Item) {
      Py_DECREF(List);
      return nullptr;
    }
    PyList_SetItem(List, Py_ssize_t(K), Item);
  }
  return List;
}

//===----------------------------------------------------------------------===//
// Module functions
//===----------------------------------------------------------------------===//

/// compile(source: str | bytes-like, shapes: list[(str, tuple)],
///         symbols: list[(str, int)], backend: str, fusion: bool,
///         disabled_fusions: list[str], disabled_passes: list[str],
///         arch: str | None, cache_dir: str | None, allow_tf32: bool,
///         precision: str, compute_io: bool, layout: str,
///         fuse_attention: bool, auto_attention: bool, tune: str,
///         gemm_kernels: str, attention_kernels: str,
///         dependent_launch: bool, defer_norms: bool,
///         conv_epilogues: str)
PyObject *compileModel(PyObject *, PyObject *Args) {
  PyObject *Source, *Shapes, *Symbols, *Fusions, *Passes;
  const char *Backend, *Arch, *CacheDir, *Prec, *Layout, *Tune, *Gemm, *Attn,
      *Conv;
  int Fusion, AllowTF32, ComputeIo, FuseAttention, AutoAttention,
      DependentLaunch, DeferNorms;
  if (!PyArg_ParseTuple(Args, "OOOspOOzzpspsppssspps", &Source, &Shapes,
                        &Symbols, &Backend, &Fusion, &Fusions, &Passes, &Arch,
                        &CacheDir, &AllowTF32, &Prec, &ComputeIo, &Layout,
                        &FuseAttention, &AutoAttention, &Tune, &Gemm, &Attn,
                        &DependentLaunch, &DeferNorms, &Conv))
    return nullptr;
  CompileOptions Opts;
  // As `solder compile --tune=`: fast chooses the library algorithms on
  // this GPU now; full also times the kernel candidates
  // (CompileOptions::Tune).
  const bool TuneFull = std::strcmp(Tune, "full") == 0;
  const bool TuneAlgorithms = TuneFull || std::strcmp(Tune, "fast") == 0;
  if (!TuneAlgorithms && std::strcmp(Tune, "off") != 0) {
    raiseSolderError(std::string("unknown tune '") + Tune +
                     "' (expected off, fast or full)");
    return nullptr;
  }
  std::optional<GemmKernels> G = parseGemmKernels(Gemm);
  if (!G) {
    raiseSolderError(std::string("unknown gemm_kernels '") + Gemm +
                     "' (expected auto, library, generated or wgmma)");
    return nullptr;
  }
  std::optional<AttentionKernels> A = parseAttentionKernels(Attn);
  if (!A) {
    raiseSolderError(std::string("unknown attention_kernels '") + Attn +
                     "' (expected auto, generated or cudnn)");
    return nullptr;
  }
  std::optional<ConvEpilogues> C = parseConvEpilogues(Conv);
  if (!C) {
    raiseSolderError(std::string("unknown conv_epilogues '") + Conv +
                     "' (expected auto, fused or graph)");
    return nullptr;
  }
  Opts.Gemm = *G;
  Opts.Attention = *A;
  Opts.Conv = *C;
  Opts.DependentLaunch = DependentLaunch;
  Opts.DeferNorms = DeferNorms;
  std::optional<ConvLayout> L = parseConvLayout(Layout);
  if (!L) {
    raiseSolderError(std::string("unknown layout '") + Layout +
                     "' (expected auto, nchw or nhwc)");
    return nullptr;
  }
  Opts.Layout = *L;
  std::optional<Precision> P = parsePrecision(Prec);
  if (!P) {
    raiseSolderError(std::string("unknown precision '") + Prec +
                     "' (expected fp32, tf32, fp16 or bf16)");
    return nullptr;
  }
  Opts.Prec = *P;
  Opts.ComputeIo = ComputeIo;
  if (std::strcmp(Backend, "cuda") == 0) {
    Opts.Backend = ExecutionBackend::Cuda;
  } else if (std::strcmp(Backend, "reference") == 0) {
    Opts.Backend = ExecutionBackend::Reference;
  } else {
    raiseSolderError(std::string("unknown backend '") + Backend +
                     "' (expected 'cuda' or 'reference')");
    return nullptr;
  }
  Opts.NoFusion = !Fusion;
  Opts.FuseAttention = FuseAttention;
  Opts.AutoAttention = AutoAttention;
  Opts.AllowTF32 = AllowTF32;
  Opts.Tune = TuneFull;
  Opts.Arch = Arch ? Arch : "";
  Opts.CacheDir = CacheDir ? CacheDir : "";
  if (!readStrings(Fusions, Opts.DisabledFusions, "disable_fusion") ||
      !readStrings(Passes, Opts.DisabledPasses, "disable_passes"))
    return nullptr;
  if (!PyList_Check(Shapes) || !PyList_Check(Symbols)) {
    PyErr_SetString(PyExc_TypeError, "shapes and symbols must be lists");
    return nullptr;
  }
  for (Py_ssize_t I = 0; I < PyList_Size(Shapes); ++I) {
    PyObject *Name, *Dims;
    if (!PyArg_ParseTuple(PyList_GetItem(Shapes, I), "UO", &Name, &Dims))
      return nullptr;
    std::vector<int64_t> D;
    const char *N = utf8(Name, "an input name");
    if (!N || !readDims(Dims, D))
      return nullptr;
    Opts.InputShapes[N] = std::move(D);
  }
  for (Py_ssize_t I = 0; I < PyList_Size(Symbols); ++I) {
    PyObject *Name;
    long long Size;
    if (!PyArg_ParseTuple(PyList_GetItem(Symbols, I), "UL", &Name, &Size))
      return nullptr;
    const char *N = utf8(Name, "a symbol name");
    if (!N)
      return nullptr;
    Opts.SymbolSizes[N] = Size;
  }

  // tune: the library algorithms chosen on this GPU now, recorded in the
  // plan (save_plan then writes a tuned plan, as `solder compile --tune`).
  auto Tuned = [&](llvm::Expected<std::shared_ptr<CompiledModel>> M)
      -> llvm::Expected<std::shared_ptr<CompiledModel>> {
    if (M && TuneAlgorithms)
      if (llvm::Error E = (*M)->loadOnDevice())
        return std::move(E);
    return M;
  };
  if (PyUnicode_Check(Source)) {
    std::string Path = PyUnicode_AsUTF8AndSize(Source, nullptr);
    auto M = withoutGil(
        [&] { return Tuned(CompiledModel::compileFile(Path, Opts)); });
    if (!M)
      return raise(M.takeError());
    return wrapModel(std::move(*M));
  }
  if (!PyObject_CheckBuffer(Source)) {
    PyErr_SetString(PyExc_TypeError,
                    "the model must be a path (str) or ONNX bytes");
    return nullptr;
  }
  Py_buffer View;
  if (PyObject_GetBuffer(Source, &View, PyBUF_SIMPLE) != 0)
    return nullptr;
  llvm::StringRef Bytes(static_cast<const char *>(View.buf), size_t(View.len));
  auto M = withoutGil(
      [&] { return Tuned(CompiledModel::compileBytes(Bytes, Opts)); });
  PyBuffer_Release(&View);
  if (!M)
    return raise(M.takeError());
  return wrapModel(std::move(*M));
}

PyObject *loadPlan(PyObject *, PyObject *Path) {
  const char *P = utf8(Path, "the plan path");
  if (!P)
    return nullptr;
  std::string S = P;
  auto M = withoutGil([&] { return CompiledModel::loadPlan(S); });
  if (!M)
    return raise(M.takeError());
  return wrapModel(std::move(*M));
}

//===----------------------------------------------------------------------===//
// Model
//===----------------------------------------------------------------------===//

void modelDealloc(PyObject *Self) {
  delete reinterpret_cast<ModelObject *>(Self)->Model;
  freeObject(Self);
}

PyObject *modelInputs(PyObject *Self, PyObject *) {
  return describe(model(Self).inputs());
}
PyObject *modelOutputs(PyObject *Self, PyObject *) {
  return describe(model(Self).outputs());
}

PyObject *modelBackend(PyObject *Self, PyObject *) {
  return PyUnicode_FromString(
      model(Self).backend() == ExecutionBackend::Cuda ? "cuda" : "reference");
}

PyObject *modelStats(PyObject *Self, PyObject *) {
  ModelStats S = model(Self).stats();
  return Py_BuildValue(
      "{s:n,s:n,s:n,s:K,s:K,s:K}", "steps", Py_ssize_t(S.Steps), "kernels",
      Py_ssize_t(S.Kernels), "library_calls", Py_ssize_t(S.LibraryCalls),
      "arena_bytes", (unsigned long long)S.ArenaBytes, "naive_arena_bytes",
      (unsigned long long)S.NaiveArenaBytes, "weight_bytes",
      (unsigned long long)S.WeightBytes);
}

PyObject *modelSavePlan(PyObject *Self, PyObject *Path) {
  const char *P = utf8(Path, "the plan path");
  if (!P)
    return nullptr;
  std::string S = P;
  if (llvm::Error E = withoutGil([&] { return model(Self).savePlan(S); }))
    return raise(std::move(E));
  Py_RETURN_NONE;
}

PyObject *modelCreateContext(PyObject *Self, PyObject *) {
  // Loading onto the GPU (weights upload, algorithm choice) can take
  // seconds.
  auto C = withoutGil([&] { return model(Self).createContext(); });
  if (!C)
    return raise(C.takeError());
  auto *O = allocObject<ContextObject>(ContextType);
  if (!O)
    return nullptr;
  O->Context = new std::unique_ptr<ExecutionContext>(std::move(*C));
  O->RunLock = new std::mutex;
  return reinterpret_cast<PyObject *>(O);
}

PyMethodDef ModelMethods[] = {
    {"inputs", modelInputs, METH_NOARGS, "[(name, dtype, dims)]"},
    {"outputs", modelOutputs, METH_NOARGS, "[(name, dtype, dims)]"},
    {"backend", modelBackend, METH_NOARGS, "'cuda' or 'reference'"},
    {"stats", modelStats, METH_NOARGS, "plan figures (a dict)"},
    {"save_plan", modelSavePlan, METH_O, "writes the plan file"},
    {"create_context", modelCreateContext, METH_NOARGS,
     "a new execution context"},
    {nullptr, nullptr, 0, nullptr}};

PyType_Slot ModelSlots[] = {
    {Py_tp_dealloc, reinterpret_cast<void *>(modelDealloc)},
    {Py_tp_methods, ModelMethods},
    {Py_tp_doc, const_cast<char *>("A compiled solder model (native).")},
    {0, nullptr}};

PyType_Spec ModelSpec = {"solder._solder.Model", sizeof(ModelObject), 0,
                         Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                         ModelSlots};

//===----------------------------------------------------------------------===//
// Context
//===----------------------------------------------------------------------===//

void contextDealloc(PyObject *Self) {
  auto *O = reinterpret_cast<ContextObject *>(Self);
  delete O->Context;
  delete O->RunLock;
  freeObject(Self);
}

ExecutionContext &context(PyObject *Self) {
  return **reinterpret_cast<ContextObject *>(Self)->Context;
}

PyObject *contextDevice(PyObject *Self, PyObject *) {
  return PyLong_FromLong(context(Self).device());
}

/// Runs the model on host operands through runHost (the reference
/// backend); GIL released by the caller.
llvm::Error runOnHost(ExecutionContext &Ctx, const CompiledModel &M,
                      const std::vector<std::unique_ptr<Operand>> &Ins,
                      const std::vector<std::unique_ptr<Operand>> &Outs) {
  std::vector<Tensor> Host;
  for (size_t K = 0; K < Ins.size(); ++K)
    Host.push_back(
        Tensor::copyOf(M.inputs()[K].Elem, M.inputs()[K].Dims, Ins[K]->data()));
  llvm::Expected<std::vector<Tensor>> R = Ctx.runHost(Host);
  if (!R)
    return R.takeError();
  for (size_t K = 0; K < Outs.size(); ++K) {
    const Tensor &T = (*R)[K];
    if (T.byteSize() != Outs[K]->bytes())
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "output '" + M.outputs()[K].Name + "' came out as " +
              typeToString(T.type()) + ", not the declared " +
              typeToString(
                  TensorType(M.outputs()[K].Elem, M.outputs()[K].Dims)));
    std::memcpy(Outs[K]->data(), T.rawData(), T.byteSize());
  }
  return llvm::Error::success();
}

/// Binds or copies every operand and runs on Stream (the cuda backend);
/// synchronous only when an output is host memory. GIL released.
llvm::Error runOnDevice(ExecutionContext &Ctx,
                        const std::vector<std::unique_ptr<Operand>> &Ins,
                        const std::vector<std::unique_ptr<Operand>> &Outs,
                        cudaStream_t Stream) {
  for (size_t K = 0; K < Ins.size(); ++K) {
    const Operand &Op = *Ins[K];
    if (llvm::Error E = Op.onDevice() ? Ctx.bindInput(K, Op.data())
                                      : Ctx.copyInputFromHost(
                                            K, Op.data(), Op.bytes(), Stream))
      return E;
  }
  bool HostOutputs = false;
  for (size_t K = 0; K < Outs.size(); ++K) {
    HostOutputs |= !Outs[K]->onDevice();
    // Host outputs are written to the context's own buffer (null), then
    // copied.
    if (llvm::Error E =
            Ctx.bindOutput(K, Outs[K]->onDevice() ? Outs[K]->data() : nullptr))
      return E;
  }
  if (llvm::Error E = Ctx.run(Stream))
    return E;
  if (!HostOutputs)
    return llvm::Error::success();
  for (size_t K = 0; K < Outs.size(); ++K)
    if (!Outs[K]->onDevice())
      if (llvm::Error E = Ctx.copyOutputToHost(K, Outs[K]->data(),
                                               Outs[K]->bytes(), Stream))
        return E;
  return llvm::Error::success();
}

/// Acquires one list of operands; false with an exception set on error.
bool acquireAll(PyObject *List, llvm::ArrayRef<TensorInfo> Infos,
                const char *Role, bool Writable, int Device,
                long long DLPackStream,
                std::vector<std::unique_ptr<Operand>> &Out) {
  if (!PyList_Check(List) || PyList_Size(List) != Py_ssize_t(Infos.size())) {
    raiseSolderError(std::string("expected a list of ") +
                     std::to_string(Infos.size()) + " " + Role + "s");
    return false;
  }
  for (size_t K = 0; K < Infos.size(); ++K) {
    std::string Name = std::string(Role) + " '" + Infos[K].Name + "'";
    Out.push_back(std::make_unique<Operand>());
    if (!Out.back()->acquire(PyList_GetItem(List, Py_ssize_t(K)), Infos[K],
                             Name, Writable, DLPackStream))
      return false;
    int D = Out.back()->device();
    if (D < 0)
      continue;
    if (Device < 0) {
      raiseSolderError(Name + " is on cuda:" + std::to_string(D) +
                       "; the reference backend runs on the CPU: pass host "
                       "arrays");
      return false;
    }
    if (D != Device) {
      raiseSolderError(Name + " is on cuda:" + std::to_string(D) +
                       ", the context on cuda:" + std::to_string(Device));
      return false;
    }
  }
  return true;
}

/// run(inputs: list, outputs: list, stream: int, dlpack_stream: int):
/// inputs and outputs in model order; outputs are written in place. The
/// run goes on `stream` (a cudaStream_t); `dlpack_stream` is what CUDA
/// tensors' __dlpack__ is told: that stream in DLPack's spelling (1 for
/// the legacy default one), or -1 when the tensors' producer already
/// orders its work on it (torch's current stream), so it adds no event.
PyObject *contextRun(PyObject *Self, PyObject *Args) {
  PyObject *InList, *OutList;
  unsigned long long StreamHandle;
  long long DLPackStream;
  if (!PyArg_ParseTuple(Args, "OOKL", &InList, &OutList, &StreamHandle,
                        &DLPackStream))
    return nullptr;
  auto *O = reinterpret_cast<ContextObject *>(Self);
  ExecutionContext &Ctx = **O->Context;
  const CompiledModel &M = Ctx.model();
  std::vector<std::unique_ptr<Operand>> Ins, Outs;
  if (!acquireAll(InList, M.inputs(), "input", false, Ctx.device(),
                  DLPackStream, Ins) ||
      !acquireAll(OutList, M.outputs(), "output", true, Ctx.device(),
                  DLPackStream, Outs))
    return nullptr;
  auto *Stream = reinterpret_cast<cudaStream_t>(uintptr_t(StreamHandle));
  llvm::Error E = withoutGil([&] {
    std::lock_guard<std::mutex> Lock(*O->RunLock);
    return Ctx.backend() == ExecutionBackend::Reference
               ? runOnHost(Ctx, M, Ins, Outs)
               : runOnDevice(Ctx, Ins, Outs, Stream);
  });
  if (E)
    return raise(std::move(E));
  Py_RETURN_NONE;
}

/// run_bound(stream: int): one run on the buffers the latest run() bound
/// (the Python layer's fast path when it is handed the same CUDA tensors
/// again). GPU backend only.
PyObject *contextRunBound(PyObject *Self, PyObject *Args) {
  unsigned long long StreamHandle;
  if (!PyArg_ParseTuple(Args, "K", &StreamHandle))
    return nullptr;
  auto *O = reinterpret_cast<ContextObject *>(Self);
  auto *Stream = reinterpret_cast<cudaStream_t>(uintptr_t(StreamHandle));
  llvm::Error E = withoutGil([&] {
    std::lock_guard<std::mutex> Lock(*O->RunLock);
    return (*O->Context)->run(Stream);
  });
  if (E)
    return raise(std::move(E));
  Py_RETURN_NONE;
}

/// time_runs(n: int, stream: int) -> float: seconds per C++ run() call on
/// the buffers bound by the latest run (enqueue time; for measuring the
/// Python layer's overhead against the C++ API). GPU backend only.
PyObject *contextTimeRuns(PyObject *Self, PyObject *Args) {
  long long N;
  unsigned long long StreamHandle;
  if (!PyArg_ParseTuple(Args, "LK", &N, &StreamHandle))
    return nullptr;
  if (N <= 0) {
    PyErr_SetString(PyExc_ValueError, "n must be positive");
    return nullptr;
  }
  auto *O = reinterpret_cast<ContextObject *>(Self);
  auto *Stream = reinterpret_cast<cudaStream_t>(uintptr_t(StreamHandle));
  double Seconds = 0;
  llvm::Error E = withoutGil([&]() -> llvm::Error {
    std::lock_guard<std::mutex> Lock(*O->RunLock);
    auto Start = std::chrono::steady_clock::now();
    for (long long I = 0; I < N; ++I)
      if (llvm::Error Err = (*O->Context)->run(Stream))
        return Err;
    Seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - Start)
            .count();
    return llvm::Error::success();
  });
  if (E)
    return raise(std::move(E));
  return PyFloat_FromDouble(Seconds / double(N));
}

PyMethodDef ContextMethods[] = {
    {"device", contextDevice, METH_NOARGS,
     "the CUDA device (-1: reference backend)"},
    {"run", contextRun, METH_VARARGS,
     "run(inputs, outputs, stream, dlpack_stream)"},
    {"run_bound", contextRunBound, METH_VARARGS,
     "run_bound(stream): a run on the buffers bound by the latest run"},
    {"time_runs", contextTimeRuns, METH_VARARGS,
     "time_runs(n, stream) -> seconds per C++ run() call"},
    {nullptr, nullptr, 0, nullptr}};

PyType_Slot ContextSlots[] = {
    {Py_tp_dealloc, reinterpret_cast<void *>(contextDealloc)},
    {Py_tp_methods, ContextMethods},
    {Py_tp_doc, const_cast<char *>("An execution context (native).")},
    {0, nullptr}};

PyType_Spec ContextSpec = {
    "solder._solder.Context", sizeof(ContextObject), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, ContextSlots};

PyMethodDef ModuleMethods[] = {
    {"compile", compileModel, METH_VARARGS,
     "compile(source, shapes, symbols, backend, fusion, disabled_fusions, "
     "disabled_passes, arch, cache_dir, allow_tf32, precision, compute_io)"},
    {"load_plan", loadPlan, METH_O, "load_plan(path)"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef ModuleDef = {PyModuleDef_HEAD_INIT,
                         "solder._solder",
                         "solder's native layer; use the solder package.",
                         -1,
                         ModuleMethods,
                         nullptr,
                         nullptr,
                         nullptr,
                         nullptr};

} // namespace

PyMODINIT_FUNC PyInit__solder() {
  PyObject *M = PyModule_Create(&ModuleDef);
  if (!M)
    return nullptr;
  solderErrorClass() =
      PyErr_NewException("solder.SolderError", PyExc_RuntimeError, nullptr);
  ModelType = PyType_FromSpec(&ModelSpec);
  ContextType = PyType_FromSpec(&ContextSpec);
  if (!solderErrorClass() || !ModelType || !ContextType ||
      PyModule_AddObjectRef(M, "SolderError", solderErrorClass()) < 0 ||
      PyModule_AddObjectRef(M, "Model", ModelType) < 0 ||
      PyModule_AddObjectRef(M, "Context", ContextType) < 0) {
    Py_DECREF(M);
    return nullptr;
  }
  return M;
}
