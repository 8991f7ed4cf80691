//===- HostSource.cpp - A generated kernel's text, made host C++ ----------===//
#include "HostSource.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include <cctype>
#include <cstring>

namespace solder {
namespace emu {

namespace {

/// The helpers CudaHostShim.h defines for the host.
const llvm::StringSet<> &emulatedHelpers() {
  static const llvm::StringSet<> Names = {"solder_mma16816",
                                          "solder_smem",
                                          "solder_ldm_x4",
                                          "solder_ldm_x2",
                                          "solder_ldm_x4_t",
                                          "solder_ldm_x2_t",
                                          "solder_cp16",
                                          "solder_cp_commit",
                                          "solder_cp_wait1",
                                          "solder_cp_wait0",
                                          "solder_ldm_x4_u",
                                          "solder_ldm_x4_t_u",
                                          "solder_cp16_u",
                                          "solder_cp_wait",
                                          "solder_ld_cluster",
                                          "solder_cluster_sync",
                                          "solder_rowgroup_wait",
                                          "solder_wgmma",
                                          "solder_wgmma_fence",
                                          "solder_wgmma_commit",
                                          "solder_wgmma_wait",
                                          "solder_fence_async_smem",
                                          "solder_grid_wait",
                                          "solder_launch_dependents",
                                          "solder_mbar_init",
                                          "solder_fence_mbar_init",
                                          "solder_mbar_arrive",
                                          "solder_mbar_expect_tx",
                                          "solder_mbar_wait",
                                          "solder_bar_sync",
                                          "solder_tma_2d",
                                          "solder_tma_2d_mc",
                                          "solder_mbar_arrive_peer",
                                          "solder_regs_producer",
                                          "solder_regs_consumer"};
  return Names;
}

bool isIdent(char C) { return std::isalnum((unsigned char)C) || C == '_'; }

/// The index just past the brace that closes the one at Open.
size_t matchBrace(llvm::StringRef S, size_t Open) {
  int Depth = 0;
  for (size_t I = Open; I < S.size(); ++I) {
    if (S[I] == '{')
      ++Depth;
    else if (S[I] == '}' && --Depth == 0)
      return I + 1;
  }
  return llvm::StringRef::npos;
}

/// Takes out every `__device__ __forceinline__` function whose body holds
/// inline PTX and whose name the shim defines; names the others in Why.
std::string stripPtxHelpers(llvm::StringRef S, std::string &Why) {
  std::string Out;
  size_t At = 0;
  const llvm::StringRef Marker = "__device__ __forceinline__";
  for (;;) {
    size_t M = S.find(Marker, At);
    if (M == llvm::StringRef::npos)
      break;
    size_t LineStart = S.rfind('\n', M);
    LineStart = LineStart == llvm::StringRef::npos ? 0 : LineStart + 1;
    size_t Paren = S.find('(', M);
    size_t Brace = S.find('{', M);
    size_t Semi = S.find(';', M);
    if (Paren == llvm::StringRef::npos || Brace == llvm::StringRef::npos ||
        Semi < Brace || LineStart < At) {
      Out += S.slice(At, M + Marker.size()).str();
      At = M + Marker.size();
      continue;
    }
    size_t NameEnd = Paren;
    while (NameEnd > M && !isIdent(S[NameEnd - 1]))
      --NameEnd;
    size_t NameStart = NameEnd;
    while (NameStart > M && isIdent(S[NameStart - 1]))
      --NameStart;
    llvm::StringRef Name = S.slice(NameStart, NameEnd);
    size_t End = matchBrace(S, Brace);
    if (End == llvm::StringRef::npos)
      break;
    llvm::StringRef Def = S.slice(LineStart, End);
    if (!Def.contains("asm")) {
      Out += S.slice(At, End).str();
    } else {
      Out += S.slice(At, LineStart).str();
      if (!emulatedHelpers().count(Name) && Why.empty())
        Why = "inline PTX in " + Name.str() + ", which has no host version";
    }
    At = End;
  }
  Out += S.substr(At).str();
  return Out;
}

/// `__shared__ [__align__(N)] TYPE a[..][..], b[..];` as references to the
/// block's bytes; `extern __shared__ ... name[];` as its region.
std::string rewriteShared(llvm::StringRef S) {
  std::string Out;
  size_t At = 0;
  unsigned Site = 0;
  for (;;) {
    size_t M = S.find("__shared__", At);
    if (M == llvm::StringRef::npos)
      break;
    size_t Semi = S.find(';', M);
    llvm::StringRef Decl = S.slice(M, Semi);
    size_t Start = M;
    bool Extern = M >= 7 && S.slice(M - 7, M) == "extern ";
    if (Extern)
      Start = M - 7;
    Out += S.slice(At, Start).str();
    At = Semi + 1;
    llvm::StringRef Rest = Decl.drop_front(strlen("__shared__")).trim();
    std::string Align;
    if (Rest.consume_front("__align__(")) {
      Align = Rest.take_until([](char C) { return C == ')'; }).str();
      Rest = Rest.drop_front(Align.size() + 1).trim();
    }
    // The type: one identifier, or two for `unsigned char` and the like.
    llvm::StringRef Type = Rest.take_while(isIdent);
    Rest = Rest.drop_front(Type.size()).trim();
    std::string TypeText = Type.str();
    if (Type == "unsigned" || Type == "signed" || Type == "long") {
      llvm::StringRef More = Rest.take_while(isIdent);
      TypeText += " " + More.str();
      Rest = Rest.drop_front(More.size()).trim();
    }
    llvm::SmallVector<llvm::StringRef, 4> Declarators;
    Rest.split(Declarators, ',');
    for (llvm::StringRef D : Declarators) {
      D = D.trim();
      llvm::StringRef Name = D.take_while(isIdent);
      std::string Dims = D.drop_front(Name.size()).trim().str();
      if (Extern) {
        Out += TypeText + " *" + Name.str() + " = (" + TypeText +
               " *)solder_emu_rt->BlockShared(~0u);";
        continue;
      }
      std::string Full = TypeText + Dims;
      std::string Ptr =
          Dims.empty() ? TypeText + " *" : TypeText + "(*)" + Dims;
      Out += "auto &" + Name.str() + " = *reinterpret_cast<" + Ptr +
             ">(solder_emu_rt->SharedVariable(" + std::to_string(Site++) +
             ", sizeof(" + Full + "), " +
             (Align.empty() ? "alignof(" + TypeText + ")" : Align) + "));";
    }
  }
  Out += S.substr(At).str();
  return Out;
}

} // namespace

HostSource hostSource(llvm::StringRef Source) {
  HostSource H;
  // Blocks that wait for each other through global memory (a cooperative
  // launch) run together as a cluster's do; a hardware cluster inside
  // them keeps its own rank, shared memory and barrier.
  auto ReadDims = [&](llvm::StringRef Marker, std::array<unsigned, 3> &Out) {
    size_t C = Source.find(Marker);
    if (C == llvm::StringRef::npos)
      return false;
    llvm::StringRef Args = Source.substr(C + Marker.size());
    Args = Args.take_until([](char Ch) { return Ch == ')'; });
    llvm::SmallVector<llvm::StringRef, 3> Dims;
    Args.split(Dims, ',');
    for (size_t I = 0; I < Dims.size() && I < 3; ++I)
      if (Dims[I].trim().getAsInteger(10, Out[I]))
        H.Why = "cluster dims '" + Args.str() + "' are not numbers";
    return true;
  };
  bool Hw = ReadDims("__cluster_dims__(", H.HwCluster);
  if (!ReadDims("solder_coresident(", H.Cluster) && Hw)
    H.Cluster = H.HwCluster;
  for (int D = 0; D < 3 && H.Why.empty(); ++D)
    if (!H.HwCluster[D] || H.Cluster[D] % H.HwCluster[D])
      H.Why = "the blocks run together are not whole clusters";
  std::string Text = stripPtxHelpers(Source, H.Why);
  if (H.Why.empty() && (llvm::StringRef(Text).contains("asm(") ||
                        llvm::StringRef(Text).contains("asm volatile")))
    H.Why = "inline PTX outside the helpers the emulator knows";
  if (!H.Why.empty())
    return H;
  H.MmaBf16 = Source.contains("f32.bf16.bf16");
  // wgmma's N and tnspB, from the helper's instruction: "...m64n<N>k16..."
  // and its immediates "p, 1, 1, 0, <tnspB>;".
  const llvm::StringRef Wgmma = "wgmma.mma_async.sync.aligned.m64n";
  size_t W = Source.find(Wgmma);
  if (W != llvm::StringRef::npos) {
    llvm::StringRef N = Source.substr(W + Wgmma.size());
    N = N.take_while([](char Ch) { return std::isdigit((unsigned char)Ch); });
    const llvm::StringRef Imm = "p, 1, 1, 0, ";
    size_t I = Source.find(Imm, W);
    if (N.getAsInteger(10, H.WgmmaN) || I == llvm::StringRef::npos) {
      H.Why = "a wgmma instruction the emulator cannot read";
      H.Text.clear();
      return H;
    }
    H.WgmmaTransB = Source[I + Imm.size()] == '1';
  }
  H.Text = rewriteShared(Text);
  // A tensor map arrives by reference (a pointer to the emulator's
  // SolderEmuTensorMap in its 128 bytes), as every other parameter.
  const std::string Param = "const __grid_constant__ solder_tmap_t ";
  for (size_t At; (At = H.Text.find(Param)) != std::string::npos;)
    H.Text.replace(At, Param.size(), "const solder_tmap_t &");
  return H;
}

} // namespace emu
} // namespace solder
