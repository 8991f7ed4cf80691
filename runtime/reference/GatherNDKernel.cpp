//===- GatherNDKernel.cpp - Reference GatherND -----------------------------===//
//
// out[b..., i...] = data[b..., idx[b..., i..., 0..k-1], rest...]: a gather of
// slices addressed by the last dim of the index tensor, with batch_dims
// leading dims shared by data and indices (ONNX GatherND-13).
//
//===----------------------------------------------------------------------===//
#include "runtime/reference/Kernels.h"
#include <cstring>

namespace solder {
namespace ref {

llvm::Error evalGatherND(KernelContext &Ctx) {
  const Tensor &X = *Ctx.in(0), &Idx = *Ctx.in(1);
  int64_t B = Ctx.attrs().getInt("batch_dims", 0);
  llvm::ArrayRef<int64_t> XD = X.dims(), ID = Idx.dims();
  if (ID.empty())
    return Ctx.error("indices must have rank >= 1");
  int64_t K = ID.back();
  if (B < 0 || B >= int64_t(ID.size()) || B + K > int64_t(XD.size()))
    return Ctx.error("batch_dims and index depth do not fit the operands");
  for (int64_t I = 0; I < B; ++I)
    if (XD[I] != ID[I])
      return Ctx.error("batch dims of data and indices differ");
  int64_t Batch = 1, SliceElems = 1;
  for (int64_t I = 0; I < B; ++I)
    Batch *= XD[I];
  for (size_t I = B + K; I < XD.size(); ++I)
    SliceElems *= XD[I];
  int64_t PerBatchIdx = 1; // index tuples per batch
  for (size_t I = B; I + 1 < ID.size(); ++I)
    PerBatchIdx *= ID[I];
  int64_t BatchStride = 1; // data elements per batch
  for (size_t I = B; I < XD.size(); ++I)
    BatchStride *= XD[I];
  llvm::SmallVector<int64_t, 8> OutDims(ID.begin(), ID.end() - 1);
  OutDims.append(XD.begin() + B + K, XD.end());
  Tensor Out(X.dtype(), OutDims);
  size_t ES = dtypeSize(X.dtype());
  const char *Src = static_cast<const char *>(X.rawData());
  char *Dst = static_cast<char *>(Out.mutableRawData());
  const int64_t *IP = Idx.data<int64_t>();
  for (int64_t Bi = 0; Bi < Batch; ++Bi) {
    for (int64_t T = 0; T < PerBatchIdx; ++T) {
      const int64_t *Tuple = IP + (Bi * PerBatchIdx + T) * K;
      int64_t Off = 0;
      for (int64_t J = 0; J < K; ++J) {
        int64_t Dim = XD[B + J], V = Tuple[J];
        if (V < -Dim || V >= Dim)
          return Ctx.error("index " + llvm::Twine(V) + " out of range for dim " +
                           llvm::Twine(Dim));
        Off = Off * Dim + (V < 0 ? V + Dim : V);
      }
      std::memcpy(Dst + ((Bi * PerBatchIdx + T) * SliceElems) * ES,
                  Src + (Bi * BatchStride + Off * SliceElems) * ES,
                  SliceElems * ES);
    }
  }
  Ctx.Results[0] = std::move(Out);
  return llvm::Error::success();
}

} // namespace ref
} // namespace solder
