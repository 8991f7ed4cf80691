//===- PlanCache.cpp - Whole plans kept beside the kernel cache -----------===//
#include "tools/PlanCache.h"
#include "codegen/NvrtcCompiler.h"
#include "frontend/TensorProto.h"
#include "ir/FileBytes.h"
#include "passes/Slices.h"
#include "runtime/cuda/PlanFile.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace llvm;

namespace solder {

namespace {

constexpr StringLiteral KeyMagic = "solder-plan-cache-v1";
constexpr StringLiteral RecordMagic = "solder-plan-cache-entry-v1";
/// Hashed in slices of this size, each on whichever thread takes it.
constexpr uint64_t SliceBytes = uint64_t(4) << 20;
/// Temporaries older than this in the cache folder were left by a killed
/// process.
constexpr auto StaleTemporary = std::chrono::hours(1);

std::string hex64(uint64_t V) {
  std::string S;
  raw_string_ostream(S) << format_hex_no_prefix(V, 16);
  return S;
}

/// One line of key text per ingredient: newlines and backslashes escaped so
/// an argument cannot pose as another line.
void addLine(std::string &Text, StringRef Tag, StringRef Value) {
  Text += Tag;
  Text += ' ';
  for (char C : Value) {
    if (C == '\\')
      Text += "\\\\";
    else if (C == '\n')
      Text += "\\n";
    else
      Text += C;
  }
  Text += '\n';
}

/// A temporary name beside Path (which need not exist).
std::string temporaryBeside(StringRef Path) {
  SmallString<256> Model(Path);
  Model += ".tmp-%%%%%%%%";
  SmallString<256> Out;
  sys::fs::createUniquePath(Model, Out, /*MakeAbsolute=*/false);
  return std::string(Out);
}

/// Links Existing under a new temporary name beside Where.
std::optional<std::string> linkBeside(StringRef Existing, StringRef Where) {
  for (int Try = 0; Try < 4; ++Try) {
    std::string Temp = temporaryBeside(Where);
    if (::link(Existing.str().c_str(), Temp.c_str()) == 0)
      return Temp;
    if (errno != EEXIST)
      return std::nullopt; // EXDEV (another filesystem), EPERM...
  }
  return std::nullopt;
}

struct Record {
  std::string PlanHash, KeyText, Summary;
};

std::string recordText(const Record &R) {
  return (RecordMagic + "\nplan " + R.PlanHash + "\nkey " +
          Twine(R.KeyText.size()) + "\n" + R.KeyText + "summary " +
          Twine(R.Summary.size()) + "\n" + R.Summary)
      .str();
}

/// Takes "TAG N\n" and the N bytes after it off the front of S.
std::optional<std::string> takeSized(StringRef &S, StringRef Tag) {
  auto [Line, Rest] = S.split('\n');
  uint64_t N;
  if (!Line.consume_front(Tag) || !Line.consume_front(" ") ||
      Line.getAsInteger(10, N) || N > Rest.size())
    return std::nullopt;
  std::string Value = Rest.take_front(N).str();
  S = Rest.drop_front(N);
  return Value;
}

std::optional<Record> parseRecord(StringRef S) {
  auto [Magic, Rest] = S.split('\n');
  auto [PlanLine, Rest2] = Rest.split('\n');
  Record R;
  if (Magic != RecordMagic || !PlanLine.consume_front("plan "))
    return std::nullopt;
  R.PlanHash = PlanLine.str();
  std::optional<std::string> Key = takeSized(Rest2, "key");
  std::optional<std::string> Summary =
      Key ? takeSized(Rest2, "summary") : std::nullopt;
  if (!Summary || !Rest2.empty())
    return std::nullopt;
  R.KeyText = std::move(*Key);
  R.Summary = std::move(*Summary);
  return R;
}

bool sameFile(StringRef A, StringRef B) {
  struct stat SA, SB;
  return ::stat(A.str().c_str(), &SA) == 0 &&
         ::stat(B.str().c_str(), &SB) == 0 && SA.st_dev == SB.st_dev &&
         SA.st_ino == SB.st_ino;
}

} // namespace

std::optional<std::string> hashFileBytes(StringRef Path) {
  Expected<std::unique_ptr<MemoryBuffer>> Buf =
      readFileBytes(Path, "file", /*MapAbove=*/SliceBytes);
  if (!Buf) {
    consumeError(Buf.takeError());
    return std::nullopt;
  }
  StringRef Bytes = (*Buf)->getBuffer();
  // Slices hash independently (a model of gigabytes hashes at the page
  // cache's speed times the threads), then their sums in order.
  int64_t Slices = int64_t((Bytes.size() + SliceBytes - 1) / SliceBytes);
  std::vector<uint64_t> Sums(size_t(Slices), 0);
  forEachSlice(Slices, hardwareThreads(std::min<int64_t>(Slices, 16)),
               [&](int64_t Begin, int64_t End) {
                 for (int64_t I = Begin; I < End; ++I)
                   Sums[size_t(I)] = planChecksum(
                       Bytes.substr(uint64_t(I) * SliceBytes, SliceBytes));
               });
  PlanChecksum All;
  All.update(StringRef(reinterpret_cast<const char *>(Sums.data()),
                       Sums.size() * sizeof(uint64_t)));
  return hex64(All.finish()) + " " + std::to_string(Bytes.size());
}

std::optional<std::vector<std::string>>
planCacheArgs(ArrayRef<const char *> Argv) {
  std::vector<std::string> Args;
  for (size_t I = 1; I < Argv.size(); ++I) {
    StringRef A = Argv[I];
    if (A.startswith("@"))
      return std::nullopt;
    // The output's name does not change the plan: `-o X`, `-o=X` (and the
    // `--o` spellings llvm::cl takes alike).
    if (A == "-o" || A == "--o") {
      ++I;
      continue;
    }
    if (A.startswith("-o=") || A.startswith("--o="))
      continue;
    Args.push_back(A.str());
  }
  return Args;
}

std::optional<PlanCacheKey>
planCacheKey(ArrayRef<std::string> Args, StringRef Model,
             ArrayRef<std::string> ExternalLocations, StringRef Arch,
             StringRef Nvrtc) {
  static int Anchor;
  std::string Exe = sys::fs::getMainExecutable(nullptr, &Anchor);
  std::string ExeStamp = Exe.empty() ? "" : fileStamp(Exe);
  if (ExeStamp.empty())
    return std::nullopt;
  std::string Text = KeyMagic.str() + "\n";
  addLine(Text, "solder", Exe + " " + ExeStamp);
  addLine(Text, "nvrtc", Nvrtc);
  addLine(Text, "arch", Arch);
  // What the compile reads from the environment besides its arguments:
  // where CUDA's headers and libraries come from, which GPU is visible.
  for (const char *Name : {"CUDA_PATH", "CUDA_HOME", "LD_LIBRARY_PATH",
                           "CUDA_VISIBLE_DEVICES", "SOLDER_CUDNN_SEARCH"}) {
    const char *V = std::getenv(Name);
    addLine(Text, "env", V ? (Twine(Name) + "=" + V).str() : Name);
  }
  for (const std::string &A : Args)
    addLine(Text, "arg", A);
  std::optional<std::string> ModelHash = hashFileBytes(Model);
  if (!ModelHash)
    return std::nullopt;
  addLine(Text, "model", *ModelHash);
  StringRef Dir = sys::path::parent_path(Model);
  for (const std::string &Loc : ExternalLocations) {
    // Only files the importer would read: inside the model's folder.
    if (Loc.empty() || onnximport::externalLocationEscapes(Loc))
      return std::nullopt;
    SmallString<256> Full(Dir.empty() ? "." : Dir);
    sys::path::append(Full, Loc);
    std::optional<std::string> H = hashFileBytes(Full);
    if (!H)
      return std::nullopt;
    addLine(Text, "external", Loc + " " + *H);
  }
  std::string Name =
      hex64(planChecksum("a\n" + Text)) + hex64(planChecksum("b\n" + Text));
  return PlanCacheKey{std::move(Text), std::move(Name)};
}

PlanCache::PlanCache(std::string Dir, uint64_t LimitBytes)
    : Dir(std::move(Dir)), LimitBytes(LimitBytes) {}

std::string PlanCache::path(const PlanCacheKey &Key, StringRef Ext) const {
  SmallString<256> P(Dir);
  sys::path::append(P, Key.Name + Ext);
  return std::string(P);
}

std::optional<std::string> PlanCache::serve(const PlanCacheKey &Key,
                                            StringRef Out) {
  std::string RecordPath = path(Key, ".key");
  Expected<std::unique_ptr<MemoryBuffer>> Buf =
      readFileBytes(RecordPath, "plan cache record");
  if (!Buf) {
    consumeError(Buf.takeError());
    return std::nullopt;
  }
  std::optional<Record> R = parseRecord((*Buf)->getBuffer());
  if (!R || R->KeyText != Key.Text)
    return std::nullopt;
  std::string Entry = path(Key, ".plan");
  auto Used = [&] {
    // The record's time is the entry's last use, for eviction.
    (void)::utimensat(AT_FDCWD, RecordPath.c_str(), nullptr, 0);
    return std::move(R->Summary);
  };
  if (sameFile(Entry, Out)) {
    if (hashFileBytes(Out) != R->PlanHash)
      return std::nullopt;
    return Used();
  }
  // Through a link of its own: the bytes hashed are the ones renamed to Out
  // even if the entry is replaced meanwhile.
  std::optional<std::string> Temp = linkBeside(Entry, Out);
  if (!Temp)
    return std::nullopt;
  sys::RemoveFileOnSignal(*Temp);
  bool Served =
      hashFileBytes(*Temp) == R->PlanHash && !sys::fs::rename(*Temp, Out);
  // Gone once renamed, but for rename() of two links to one file, which
  // does nothing (Out already was the plan).
  sys::fs::remove(*Temp);
  sys::DontRemoveFileOnSignal(*Temp);
  if (!Served)
    return std::nullopt;
  return Used();
}

void PlanCache::store(const PlanCacheKey &Key, StringRef Out,
                      StringRef Summary) {
  if (sys::fs::create_directories(Dir))
    return;
  std::string Entry = path(Key, ".plan");
  std::optional<std::string> Temp = linkBeside(Out, Entry);
  if (!Temp)
    return;
  sys::RemoveFileOnSignal(*Temp);
  std::optional<std::string> Hash = hashFileBytes(*Temp);
  bool Stored = Hash && !sys::fs::rename(*Temp, Entry);
  sys::fs::remove(*Temp); // gone once renamed
  sys::DontRemoveFileOnSignal(*Temp);
  if (!Stored)
    return;
  consumeError(writeCacheFileAtomically(
      path(Key, ".key"), recordText({*Hash, Key.Text, Summary.str()})));
  evict(Entry);
}

void PlanCache::evict(const std::string &Kept) {
  struct Entry {
    std::string Plan, Record;
    uint64_t Bytes;
    sys::TimePoint<> LastUse;
  };
  std::vector<Entry> Entries;
  uint64_t Total = 0;
  auto Now = std::chrono::system_clock::now();
  std::error_code EC;
  for (sys::fs::directory_iterator It(Dir, EC), End; It != End && !EC;
       It.increment(EC)) {
    std::string P = It->path();
    StringRef Name = sys::path::filename(P);
    sys::fs::file_status St;
    if (sys::fs::status(P, St))
      continue;
    if (Name.contains(".tmp-")) {
      if (Now - St.getLastModificationTime() > StaleTemporary)
        sys::fs::remove(P);
      continue;
    }
    if (!Name.endswith(".plan"))
      continue;
    std::string Rec = P.substr(0, P.size() - 5) + ".key";
    sys::fs::file_status RS;
    sys::TimePoint<> LastUse = sys::fs::status(Rec, RS)
                                   ? St.getLastModificationTime()
                                   : RS.getLastModificationTime();
    Entries.push_back({P, Rec, St.getSize(), LastUse});
    Total += St.getSize();
  }
  if (Total <= LimitBytes)
    return;
  llvm::sort(Entries, [](const Entry &A, const Entry &B) {
    return A.LastUse < B.LastUse;
  });
  for (const Entry &E : Entries) {
    if (Total <= LimitBytes)
      break;
    if (E.Plan == Kept)
      continue;
    sys::fs::remove(E.Record);
    sys::fs::remove(E.Plan);
    Total -= E.Bytes;
  }
}

} // namespace solder
