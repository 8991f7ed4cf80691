//===- KernelUtils.cpp - Shared helpers of the reference kernels ----------===//
//
// Shape arithmetic behind numpy broadcasting for the reference kernels.
//
//===----------------------------------------------------------------------===//
#include "runtime/reference/KernelUtils.h"
#include "llvm/Support/raw_ostream.h"

namespace solder {
namespace ref {

bool broadcastDims(llvm::ArrayRef<llvm::ArrayRef<int64_t>> Shapes,
                   DimVector &Out) {
  size_t Rank = 0;
  for (llvm::ArrayRef<int64_t> S : Shapes)
    Rank = std::max(Rank, S.size());
  Out.assign(Rank, 1);
  for (llvm::ArrayRef<int64_t> S : Shapes) {
    size_t Lead = Rank - S.size();
    for (size_t I = 0; I < S.size(); ++I) {
      int64_t &O = Out[Lead + I];
      int64_t D = S[I];
      if (D == O || D == 1)
        continue;
      if (O != 1)
        return false;
      O = D;
    }
  }
  return true;
}

static std::string dimsToString(llvm::ArrayRef<int64_t> Dims) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  OS << '[';
  for (size_t I = 0; I < Dims.size(); ++I)
    OS << (I ? "," : "") << Dims[I];
  OS << ']';
  return OS.str();
}

llvm::Expected<DimVector>
broadcastOperandDims(const KernelContext &Ctx,
                     llvm::ArrayRef<const Tensor *> Operands) {
  llvm::SmallVector<llvm::ArrayRef<int64_t>, 4> Shapes;
  for (const Tensor *T : Operands)
    Shapes.push_back(T->dims());
  DimVector Out;
  if (broadcastDims(Shapes, Out))
    return Out;
  std::string List;
  for (size_t I = 0; I < Shapes.size(); ++I)
    List += (I ? ", " : "") + dimsToString(Shapes[I]);
  return Ctx.error("operand shapes " + List + " do not broadcast");
}

DimVector broadcastStrides(llvm::ArrayRef<int64_t> In,
                           llvm::ArrayRef<int64_t> Out) {
  assert(In.size() <= Out.size() && "broadcast cannot lower the rank");
  DimVector Strides(Out.size(), 0);
  size_t Lead = Out.size() - In.size();
  int64_t Stride = 1;
  for (size_t I = In.size(); I-- > 0;) {
    assert((In[I] == Out[Lead + I] || In[I] == 1) && "not broadcastable");
    Strides[Lead + I] = In[I] == 1 ? 0 : Stride;
    Stride *= In[I];
  }
  return Strides;
}

DimVector contiguousStrides(llvm::ArrayRef<int64_t> Dims) {
  DimVector Strides(Dims.size(), 0);
  int64_t Stride = 1;
  for (size_t I = Dims.size(); I-- > 0;) {
    Strides[I] = Stride;
    Stride *= Dims[I];
  }
  return Strides;
}

} // namespace ref
} // namespace solder
