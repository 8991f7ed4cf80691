//===- ConvPads.cpp - Effective pads of Conv and ConvTranspose
//-------------===//
#include "ir/ConvPads.h"
#include <algorithm>

namespace solder {

bool ConvPads::symmetric() const {
  for (size_t I = 0; I < Begin.size(); ++I)
    if (Begin[I] != End[I] || Begin[I] < 0)
      return false;
  return true;
}

static std::vector<int64_t> intsOr(const Node &N, const char *Name,
                                   size_t Count, int64_t Default) {
  std::vector<int64_t> V = N.attrs().getInts(Name);
  return V.size() == Count ? V : std::vector<int64_t>(Count, Default);
}

ConvPads effectiveConvPads(const Node &N, llvm::ArrayRef<int64_t> In,
                           llvm::ArrayRef<int64_t> Kernel,
                           llvm::ArrayRef<int64_t> Out) {
  size_t R = In.size();
  bool Transposed = N.kind() == OpKind::ConvTranspose;
  std::vector<int64_t> S = intsOr(N, "strides", R, 1),
                       D = intsOr(N, "dilations", R, 1),
                       P = intsOr(N, "pads", 2 * R, 0),
                       OP = intsOr(N, "output_padding", R, 0);
  std::string Auto = N.attrs().getString("auto_pad", "NOTSET");
  bool Same = Auto == "SAME_UPPER" || Auto == "SAME_LOWER";
  bool FromShape = Same || (Transposed && N.attrs().has("output_shape"));
  ConvPads Pads;
  for (size_t I = 0; I < R; ++I) {
    int64_t KEff = (Kernel[I] - 1) * D[I] + 1, B = P[I], E = P[I + R];
    if (Auto == "VALID") {
      B = E = 0;
    } else if (FromShape && Transposed) {
      // Halve rounding down, as ONNX's reference does, so a negative total
      // (an output larger than the scattered region) extends at the end.
      int64_t Total = S[I] * (In[I] - 1) + OP[I] + KEff - Out[I];
      int64_t Half = Total >= 0 ? Total / 2 : -((-Total + 1) / 2);
      B = Auto == "SAME_UPPER" ? Half : Total - Half;
      E = Total - B;
    } else if (FromShape) {
      int64_t OutSize = (In[I] + S[I] - 1) / S[I];
      int64_t Total = std::max<int64_t>(0, (OutSize - 1) * S[I] + KEff - In[I]);
      B = Auto == "SAME_UPPER" ? Total / 2 : Total - Total / 2;
      E = Total - B;
    }
    Pads.Begin.push_back(B);
    Pads.End.push_back(E);
  }
  return Pads;
}

} // namespace solder
