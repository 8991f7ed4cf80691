//===- Layout.cpp - Channels-last (NHWC) convolutions and pools -----------===//
#include "ir/Layout.h"
#include "llvm/ADT/Twine.h"

namespace solder {

bool takesLayout(OpKind K) {
  return K == OpKind::Conv || K == OpKind::MaxPool || K == OpKind::AveragePool;
}

bool isNhwc(const Node &N) {
  return takesLayout(N.kind()) &&
         N.attrs().getString(LayoutAttrName, NchwLayout) == NhwcLayout;
}

unsigned channelAxis(const Node &N) { return isNhwc(N) ? 3 : 1; }

llvm::Error checkLayout(const Node &N, unsigned Rank, bool &Nhwc) {
  std::string L = N.attrs().getString(LayoutAttrName, NchwLayout);
  Nhwc = L == NhwcLayout;
  if (L != NchwLayout && !Nhwc)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "layout must be \"NCHW\" or \"NHWC\", got "
                                   "\"" +
                                       L + "\"");
  if (Nhwc && Rank != 4)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "layout \"NHWC\" needs a 2-D (rank 4) input, got rank " +
            llvm::Twine(Rank));
  return llvm::Error::success();
}

llvm::SmallVector<int64_t, 6> transposePerm(const Node &N, unsigned Rank) {
  std::vector<int64_t> P = N.attrs().getInts("perm", {});
  llvm::SmallVector<int64_t, 6> Perm(P.begin(), P.end());
  if (Perm.empty())
    for (unsigned I = 0; I < Rank; ++I)
      Perm.push_back(Rank - 1 - I);
  return Perm;
}

llvm::SmallVector<int64_t, 6> invertPerm(llvm::ArrayRef<int64_t> Perm) {
  llvm::SmallVector<int64_t, 6> Inv(Perm.size());
  for (size_t I = 0; I < Perm.size(); ++I)
    Inv[Perm[I]] = int64_t(I);
  return Inv;
}

llvm::SmallVector<int64_t, 6> composePerms(llvm::ArrayRef<int64_t> First,
                                           llvm::ArrayRef<int64_t> Second) {
  // y = T(x, First): y[i..] dim I is x dim First[I]; z = T(y, Second): z dim
  // I is y dim Second[I] = x dim First[Second[I]].
  llvm::SmallVector<int64_t, 6> Out;
  for (int64_t S : Second)
    Out.push_back(First[S]);
  return Out;
}

bool isIdentityPerm(llvm::ArrayRef<int64_t> Perm) {
  for (size_t I = 0; I < Perm.size(); ++I)
    if (Perm[I] != int64_t(I))
      return false;
  return true;
}

} // namespace solder
