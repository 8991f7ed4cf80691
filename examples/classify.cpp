//===- classify.cpp - Run an ONNX model on the GPU with solder's API ------===//
//
//   classify MODEL.onnx [NAME=DIMS ...]
//
// Compiles the model for this GPU (symbolic dims bound by NAME=DIMS, e.g.
// N=1 or input=1x3x224x224), feeds every input from the host (floats
// 0, 1/n, 2/n, ... like the ONNX test runner; integers 0, 1, 2, ...
// modulo 10), runs it through an execution context and prints each
// output's shape, its first values and, for a [1, classes] output, the
// top-5 classes.
//
//===----------------------------------------------------------------------===//
#include "solder/Solder.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <cuda_runtime_api.h>
#include <numeric>

using namespace llvm;

static int fail(Error E) {
  errs() << "error: " << toString(std::move(E)) << "\n";
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    errs() << "usage: classify MODEL.onnx [NAME=DIMS ...]\n";
    return 2;
  }
  solder::CompileOptions Opts;
  Opts.CacheDir = ""; // the default kernel cache
  for (int I = 2; I < argc; ++I) {
    auto [Name, Dims] = StringRef(argv[I]).split('=');
    SmallVector<StringRef, 4> Parts;
    Dims.split(Parts, 'x');
    std::vector<int64_t> Sizes;
    for (StringRef P : Parts) {
      int64_t D;
      if (P.getAsInteger(10, D)) {
        errs() << "error: bad dims in '" << argv[I] << "'\n";
        return 2;
      }
      Sizes.push_back(D);
    }
    if (Sizes.size() == 1 && !Name.empty() && Name.size() <= 8 &&
        Name.upper() == Name.str())
      Opts.SymbolSizes[Name] = Sizes[0]; // N=1: a dim symbol
    else
      Opts.InputShapes[Name] = Sizes;
  }

  auto Model = solder::CompiledModel::compileFile(argv[1], Opts);
  if (!Model)
    return fail(Model.takeError());
  solder::ModelStats S = (*Model)->stats();
  outs() << "compiled: " << S.Steps << " steps (" << S.Kernels << " kernels, "
         << S.LibraryCalls << " library calls), arena " << S.ArenaBytes
         << " bytes\n";

  auto Ctx = (*Model)->createContext();
  if (!Ctx)
    return fail(Ctx.takeError());
  cudaStream_t Stream;
  if (cudaStreamCreate(&Stream) != cudaSuccess) {
    errs() << "error: cannot create a CUDA stream\n";
    return 1;
  }

  for (unsigned I = 0; I < (*Model)->inputs().size(); ++I) {
    const solder::TensorInfo &T = (*Model)->inputs()[I];
    solder::Tensor In(T.Elem, T.Dims);
    int64_t N = In.numElements();
    for (int64_t K = 0; K < N; ++K)
      In.setDouble(K, solder::isFloat(T.Elem) ? double(K) / double(N)
                                              : double(K % 10));
    if (Error E =
            (*Ctx)->copyInputFromHost(I, In.rawData(), In.byteSize(), Stream))
      return fail(std::move(E));
  }
  if (Error E = (*Ctx)->run(Stream))
    return fail(std::move(E));

  for (unsigned I = 0; I < (*Model)->outputs().size(); ++I) {
    const solder::TensorInfo &T = (*Model)->outputs()[I];
    solder::Tensor Out(T.Elem, T.Dims);
    if (Error E = (*Ctx)->copyOutputToHost(I, Out.mutableRawData(),
                                           Out.byteSize(), Stream))
      return fail(std::move(E));
    outs() << T.Name << ": " << solder::dtypeName(T.Elem) << "["
           << join(map_range(T.Dims, [](int64_t D) { return utostr(D); }), ",")
           << "]";
    for (int64_t K = 0; K < std::min<int64_t>(Out.numElements(), 6); ++K)
      outs() << (K ? ", " : " = ") << Out.getDouble(K);
    outs() << (Out.numElements() > 6 ? ", ...\n" : "\n");
    if (T.Dims.size() == 2 && T.Dims[0] == 1 && solder::isFloat(T.Elem)) {
      std::vector<int64_t> Order(T.Dims[1]);
      std::iota(Order.begin(), Order.end(), 0);
      size_t Top = std::min<size_t>(5, Order.size());
      std::partial_sort(Order.begin(), Order.begin() + Top, Order.end(),
                        [&](int64_t A, int64_t B) {
                          return Out.getDouble(A) > Out.getDouble(B);
                        });
      outs() << "  top classes:";
      for (size_t K = 0; K < Top; ++K)
        outs() << " " << Order[K] << " (" << Out.getDouble(Order[K]) << ")";
      outs() << "\n";
    }
  }
  cudaStreamDestroy(Stream);
  return 0;
}
