//===- PlanFileTest.cpp - Plan files: round trip and refusals -------------===//
//
// CPU-only: plans compiled for sm_90 with NVRTC are written, read back
// identical, and refused when a byte is flipped, the version differs, or
// the file is truncated.
//
//===----------------------------------------------------------------------===//
#if SOLDER_HAVE_CUDA
#include "runtime/cuda/PlanFile.h"
#include "RuntimeTestUtils.h"
#include "solder/Solder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace solder;
using namespace solder::test;

namespace {

Plan compiledMixedPlan() {
  auto G = parseOrFail(mixedGraphText());
  EXPECT_TRUE(G);
  PlanOptions Opts;
  Opts.Arch = "sm_90";
  Opts.CacheDir = testCacheDir();
  llvm::Expected<Plan> P = buildPlan(*G, Opts);
  EXPECT_TRUE(bool(P)) << llvm::toString(P.takeError());
  if (llvm::Error E = compilePlanKernels(*P, Opts))
    ADD_FAILURE() << llvm::toString(std::move(E));
  return std::move(*P);
}

/// The index of P's first kernel step (P.Steps.size() when it has none).
size_t firstKernelStep(const Plan &P) {
  size_t Step = 0;
  while (Step < P.Steps.size() && P.Steps[Step].K != PlanStep::Kind::Kernel)
    ++Step;
  return Step;
}

std::string tempPath(llvm::StringRef Name) {
  llvm::SmallString<128> P;
  llvm::sys::path::system_temp_directory(true, P);
  llvm::sys::path::append(P, "solder-planfile-test-" + Name);
  return std::string(P);
}

} // namespace

TEST(PlanFileTest, RoundTripIsExact) {
  Plan P = compiledMixedPlan();
  ASSERT_FALSE(P.Kernels.empty());
  for (const PlanKernel &K : P.Kernels)
    EXPECT_FALSE(K.Cubin.empty()) << K.Name;
  P.Kernels.back().GroupId = 7; // a fused group's kernel keeps its id
  P.Kernels.back().DependentLaunch = true;
  std::string Bytes = serializePlan(P);
  llvm::Expected<Plan> Back = deserializePlan(Bytes);
  ASSERT_TRUE(bool(Back)) << llvm::toString(Back.takeError());
  EXPECT_EQ(serializePlan(*Back), Bytes);
  EXPECT_EQ(Back->Arch, "sm_90");
  EXPECT_EQ(Back->Kernels.back().GroupId, 7);
  EXPECT_TRUE(Back->Kernels.back().DependentLaunch);
  EXPECT_FALSE(Back->Kernels.front().DependentLaunch);
  EXPECT_EQ(Back->Kernels.front().GroupId, P.Kernels.front().GroupId);
  EXPECT_EQ(Back->Weights, P.Weights);
  EXPECT_EQ(Back->Steps.size(), P.Steps.size());
  EXPECT_EQ(Back->ArenaBytes, P.ArenaBytes);
  EXPECT_EQ(Back->Inputs.size(), 2u);
  EXPECT_EQ(Back->Inputs[1].Dims, (std::vector<int64_t>{1, 2, 5, 5}));
}

TEST(PlanFileTest, TensorMapsRoundTripAndMalformedOnesAreRefused) {
  // A kernel's tensor maps (the TMA GEMM's) come back field for field;
  // negative twins: a box past 256 rows, a missing argument, an unaligned
  // row stride, and dims and boxes whose products would overflow are
  // refused as malformed.
  Plan P = compiledMixedPlan();
  size_t Step = firstKernelStep(P);
  ASSERT_LT(Step, P.Steps.size());
  PlanKernel &K = P.Kernels[P.Steps[Step].Index];
  PlanTensorMap T;
  T.Arg = 0;
  T.Elem = DType::BF16;
  T.Dims[0] = 64;
  T.Dims[1] = 300;
  T.RowBytes = 128;
  T.Box[0] = 64;
  T.Box[1] = 192;
  K.TensorMaps = {T};
  std::string Bytes = serializePlan(P);
  llvm::Expected<Plan> Back = deserializePlan(Bytes);
  ASSERT_TRUE(bool(Back)) << llvm::toString(Back.takeError());
  const PlanKernel &BK = Back->Kernels[P.Steps[Step].Index];
  ASSERT_EQ(BK.TensorMaps.size(), 1u);
  EXPECT_EQ(BK.TensorMaps[0].Elem, DType::BF16);
  EXPECT_EQ(BK.TensorMaps[0].Dims[1], 300);
  EXPECT_EQ(BK.TensorMaps[0].RowBytes, 128);
  EXPECT_EQ(BK.TensorMaps[0].Box[1], 192u);
  EXPECT_EQ(serializePlan(*Back), Bytes);
  for (int Bad = 0; Bad < 5; ++Bad) {
    PlanTensorMap B = T;
    if (Bad == 0)
      B.Box[1] = 300;
    else if (Bad == 1)
      B.Arg = uint32_t(P.Steps[Step].Args.size());
    else if (Bad == 2)
      B.RowBytes = 136;
    else if (Bad == 3)
      B.Dims[0] = int64_t(1) << 62; // fuzz/regressions: Dims[0] * 2 overflowed
    else
      B.Box[0] = 1u << 31; // Box[0] * 2 would wrap to 0
    K.TensorMaps = {B};
    llvm::Expected<Plan> Refused = deserializePlan(serializePlan(P));
    ASSERT_FALSE(bool(Refused)) << Bad;
    EXPECT_NE(llvm::toString(Refused.takeError()).find("malformed tensor map"),
              std::string::npos)
        << Bad;
  }
}

TEST(PlanFileTest, ScratchAndCooperativeKernelsRoundTrip) {
  // A cooperative kernel with scratch (a row normalization's statistics
  // through global memory) comes back with both; negative twin: a scratch
  // argument past the plan's scratch is refused.
  Plan P = compiledMixedPlan();
  size_t Step = firstKernelStep(P);
  ASSERT_LT(Step, P.Steps.size());
  P.Kernels[P.Steps[Step].Index].Cooperative = true;
  P.Steps[Step].Args.push_back({BufferSpace::Scratch, 0, 256});
  P.ScratchBytes = 512;
  std::string Bytes = serializePlan(P);
  llvm::Expected<Plan> Back = deserializePlan(Bytes);
  ASSERT_TRUE(bool(Back)) << llvm::toString(Back.takeError());
  EXPECT_TRUE(Back->Kernels[P.Steps[Step].Index].Cooperative);
  EXPECT_EQ(Back->ScratchBytes, 512u);
  EXPECT_EQ(Back->Steps[Step].Args.back(),
            (BufferRef{BufferSpace::Scratch, 0, 256}));
  EXPECT_EQ(serializePlan(*Back), Bytes);
  P.ScratchBytes = 256;
  llvm::Expected<Plan> Refused = deserializePlan(serializePlan(P));
  ASSERT_FALSE(bool(Refused));
  EXPECT_NE(llvm::toString(Refused.takeError()).find("missing buffer"),
            std::string::npos);
}

TEST(PlanFileTest, KernelCountsRoundTrip) {
  // The counts a kernel takes by value (its outermost loop's) come back in
  // order; negative twins: a negative count and one past the element limit
  // are refused, naming the step.
  Plan P = compiledMixedPlan();
  size_t Step = firstKernelStep(P);
  ASSERT_LT(Step, P.Steps.size());
  PlanKernel &K = P.Kernels[P.Steps[Step].Index];
  EXPECT_FALSE(K.Counts.empty()) << "generated kernels take their count";
  K.Counts = {7, 123456789};
  std::string Bytes = serializePlan(P);
  llvm::Expected<Plan> Back = deserializePlan(Bytes);
  ASSERT_TRUE(bool(Back)) << llvm::toString(Back.takeError());
  EXPECT_EQ(Back->Kernels[P.Steps[Step].Index].Counts,
            (std::vector<int64_t>{7, 123456789}));
  EXPECT_EQ(serializePlan(*Back), Bytes);
  for (int64_t Bad : {int64_t(-1), MaxElementCount + 1}) {
    K.Counts = {Bad};
    llvm::Expected<Plan> Refused = deserializePlan(serializePlan(P));
    ASSERT_FALSE(bool(Refused)) << Bad;
    EXPECT_NE(llvm::toString(Refused.takeError()).find("count out of range"),
              std::string::npos)
        << Bad;
  }
}

TEST(PlanFileTest, AttentionCallsRoundTripAndMalformedOnesAreRefused) {
  // An f16 attention block planned as one cuDNN call comes back field for
  // field; negative twins: no heads, query heads not a multiple of the
  // key/value heads, an f32 operand type, a bf16 mask on f16 operands, a
  // step index past the calls are refused.
  auto G = parseOrFail(R"(
graph "g" opset 23 {
  input %q : f16[2,4,7,16]
  input %k : f16[2,2,9,16]
  input %v : f16[2,2,9,16]
  input %m : f32[2,1,1,9]
  %y = Attention(%q, %k, %v, %m) {is_causal = 1, scale = 0.25} : f16[2,4,7,16] @"attn"
  output %y
})");
  ASSERT_TRUE(G);
  PlanOptions Opts;
  Opts.Arch = "sm_90";
  Opts.Attention = AttentionKernels::Cudnn;
  llvm::Expected<Plan> P = buildPlan(*G, Opts);
  ASSERT_TRUE(bool(P)) << llvm::toString(P.takeError());
  ASSERT_EQ(P->Attentions.size(), 1u);
  ASSERT_EQ(P->Steps.size(), 1u);
  EXPECT_EQ(P->Steps[0].K, PlanStep::Kind::Attention);
  std::string Bytes = serializePlan(*P);
  llvm::Expected<Plan> Back = deserializePlan(Bytes);
  ASSERT_TRUE(bool(Back)) << llvm::toString(Back.takeError());
  EXPECT_EQ(serializePlan(*Back), Bytes);
  const AttentionConfig &C = Back->Attentions[0];
  EXPECT_EQ(C.KvHeads, 2);
  EXPECT_EQ(C.KvLen, 9);
  EXPECT_TRUE(C.Causal);
  EXPECT_FLOAT_EQ(C.Scale, 0.25f);
  EXPECT_EQ(C.BiasElem, DType::F32);
  EXPECT_EQ(C.BiasDims, (std::array<int64_t, 4>{2, 1, 1, 9}));
  EXPECT_EQ(C.KStrides, (std::array<int64_t, 4>{2 * 9 * 16, 9 * 16, 16, 1}));
  for (int Bad = 0; Bad < 5; ++Bad) {
    Plan Q = *Back;
    AttentionConfig &B = Q.Attentions[0];
    if (Bad == 0)
      B.QHeads = 0;
    else if (Bad == 1)
      B.KvHeads = 3;
    else if (Bad == 2)
      B.Elem = DType::F32;
    else if (Bad == 3)
      B.BiasElem = DType::BF16;
    else
      Q.Steps[0].Index = 1;
    llvm::Expected<Plan> Refused = deserializePlan(serializePlan(Q));
    ASSERT_FALSE(bool(Refused)) << Bad;
    std::string Msg = llvm::toString(Refused.takeError());
    EXPECT_TRUE(Msg.find("attention call of the plan is malformed") !=
                    std::string::npos ||
                Msg.find("missing kernel or library call") != std::string::npos)
        << Bad << ": " << Msg;
  }
}

TEST(PlanFileTest, WriteIsAtomicAndReadsBack) {
  Plan P = compiledMixedPlan();
  std::string Path = tempPath("atomic.plan");
  ASSERT_FALSE(bool(writePlanFile(Path, P)));
  EXPECT_TRUE(looksLikePlanFile(Path));
  llvm::Expected<Plan> Back = readPlanFile(Path);
  ASSERT_TRUE(bool(Back)) << llvm::toString(Back.takeError());
  EXPECT_EQ(serializePlan(*Back), serializePlan(P));
  // No temporary file is left beside it.
  std::error_code EC;
  llvm::SmallString<128> Dir(llvm::sys::path::parent_path(Path));
  for (llvm::sys::fs::directory_iterator It(Dir, EC), End; It != End && !EC;
       It.increment(EC))
    EXPECT_FALSE(llvm::StringRef(It->path()).contains("atomic.plan.tmp-"))
        << It->path();
  llvm::sys::fs::remove(Path);
}

TEST(PlanFileTest, FlippedByteIsRefused) {
  std::string Bytes = serializePlan(compiledMixedPlan());
  // Flip bytes at a few places of the payload: each must be caught.
  for (size_t Pos : {size_t(40), Bytes.size() / 2, Bytes.size() - 1}) {
    std::string Bad = Bytes;
    Bad[Pos] ^= 0x10;
    llvm::Expected<Plan> P = deserializePlan(Bad);
    ASSERT_FALSE(bool(P)) << "flip at " << Pos;
    EXPECT_NE(llvm::toString(P.takeError()).find("checksum mismatch"),
              std::string::npos);
  }
}

TEST(PlanFileTest, OtherVersionIsRefused) {
  std::string Bytes = serializePlan(compiledMixedPlan());
  Bytes[8] = char(PlanFormatVersion + 1);
  llvm::Expected<Plan> P = deserializePlan(Bytes);
  ASSERT_FALSE(bool(P));
  std::string Msg = llvm::toString(P.takeError());
  EXPECT_NE(Msg.find("format version"), std::string::npos) << Msg;
}

TEST(PlanFileTest, TruncatedAndForeignFilesAreRefused) {
  std::string Bytes = serializePlan(compiledMixedPlan());
  llvm::Expected<Plan> Short =
      deserializePlan(Bytes.substr(0, Bytes.size() - 7));
  ASSERT_FALSE(bool(Short));
  EXPECT_NE(llvm::toString(Short.takeError()).find("truncated"),
            std::string::npos);
  llvm::Expected<Plan> Onnx = deserializePlan("\x08\x07\x12\x07pytorch");
  ASSERT_FALSE(bool(Onnx));
  EXPECT_NE(llvm::toString(Onnx.takeError()).find("bad magic"),
            std::string::npos);
}

TEST(PlanFileTest, ChecksumStreamsInAnyChunks) {
  std::string Bytes(1000, '\0');
  for (size_t I = 0; I < Bytes.size(); ++I)
    Bytes[I] = char(I * 7 + 3);
  uint64_t Whole = planChecksum(Bytes);
  for (size_t Step : {size_t(1), size_t(5), size_t(31), size_t(32), size_t(33),
                      size_t(999)}) {
    PlanChecksum C;
    for (size_t I = 0; I < Bytes.size(); I += Step)
      C.update(llvm::StringRef(Bytes).substr(I, Step));
    EXPECT_EQ(C.finish(), Whole) << "chunks of " << Step;
  }
  // Negative twin: one changed byte anywhere, or one byte more, differs.
  for (size_t Pos : {size_t(0), size_t(8), size_t(517), size_t(999)}) {
    std::string Bad = Bytes;
    Bad[Pos] ^= 1;
    EXPECT_NE(planChecksum(Bad), Whole) << "flip at " << Pos;
  }
  EXPECT_NE(planChecksum(Bytes + '\0'), Whole);
}

// Blobs of 16 MiB or more are checksummed on a second thread while the
// writes go out: the file must be the same bytes, checksum included, as one
// pass computes, and a flipped weight byte far into the blob is still caught.
TEST(PlanFileTest, LargeWeightsChecksummedAheadOfTheWrite) {
  Plan P = compiledMixedPlan();
  auto Big = std::make_shared<std::string>((40u << 20) + 123, '\0');
  for (size_t I = 0; I < Big->size(); I += 4096)
    (*Big)[I] = char(I / 4096 * 31 + 7);
  P.Weights.append(*Big, Big);
  P.Weights.appendCopy("tail after a gap");
  ASSERT_GE(P.Weights.size(), 16u << 20);
  std::string Bytes = serializePlan(P);
  std::string Blob = P.Weights.str();
  ASSERT_GT(Bytes.size(), Blob.size());
  EXPECT_EQ(Bytes.substr(Bytes.size() - Blob.size()), Blob);
  uint64_t Stored;
  std::memcpy(&Stored, Bytes.data() + 40, sizeof(Stored));
  EXPECT_EQ(Stored, planChecksum(Blob));
  llvm::Expected<Plan> Back = deserializePlan(Bytes);
  ASSERT_TRUE(bool(Back)) << llvm::toString(Back.takeError());
  EXPECT_EQ(Back->Weights, P.Weights);
  // Negative twin: one byte of the big piece flipped in the file.
  std::string Bad = Bytes;
  Bad[Bytes.size() - Blob.size() + (30u << 20) + 1] ^= 1;
  llvm::Expected<Plan> Refused = deserializePlan(Bad);
  ASSERT_FALSE(bool(Refused));
  EXPECT_NE(llvm::toString(Refused.takeError()).find("checksum mismatch"),
            std::string::npos);
}

// The file's weights leave in writev batches (AtomicFileStream), the
// in-memory form through the stream: both must be the same bytes, gaps and
// a piece past the last batch included.
TEST(PlanFileTest, LargePlanFileIsTheSerializedBytes) {
  Plan P = compiledMixedPlan();
  auto Big = std::make_shared<std::string>((21u << 20) + 77, '\0');
  for (size_t I = 0; I < Big->size(); I += 509)
    (*Big)[I] = char(I * 13 + 1);
  P.Weights.append(*Big, Big);
  for (int I = 0; I < 40; ++I) // small pieces, each after an alignment gap
    P.Weights.appendCopy("piece " + std::to_string(I));
  std::string Path = tempPath("large.plan");
  ASSERT_FALSE(bool(writePlanFile(Path, P)));
  auto File = llvm::MemoryBuffer::getFile(Path);
  ASSERT_TRUE(bool(File));
  EXPECT_TRUE((*File)->getBuffer() == serializePlan(P));
  llvm::Expected<Plan> Back = readPlanFile(Path);
  ASSERT_TRUE(bool(Back)) << llvm::toString(Back.takeError());
  EXPECT_EQ(Back->Weights, P.Weights);
  llvm::sys::fs::remove(Path);
}

// writeGather: buffered text before and after, empty parts, and more parts
// than one writev takes (IOV_MAX), in order.
TEST(PlanFileTest, GatheredWritesKeepTheirOrder) {
  std::string Path = tempPath("gather.bin");
  std::vector<std::string> Owned;
  for (int I = 0; I < 3000; ++I)
    Owned.push_back(I % 7 ? "<" + std::to_string(I) + ">" : "");
  std::vector<llvm::StringRef> Parts(Owned.begin(), Owned.end());
  std::string Want = "head";
  for (const std::string &S : Owned)
    Want += S;
  Want += "tail";
  int FD = -1;
  ASSERT_FALSE(llvm::sys::fs::openFileForWrite(Path, FD));
  {
    AtomicFileStream OS(FD);
    OS << "head";
    OS.writeGather(Parts);
    EXPECT_EQ(OS.tell(), Want.size() - 4);
    OS << "tail";
    OS.close();
    EXPECT_FALSE(OS.has_error());
  }
  auto File = llvm::MemoryBuffer::getFile(Path);
  ASSERT_TRUE(bool(File));
  EXPECT_EQ((*File)->getBuffer().str(), Want);
  llvm::sys::fs::remove(Path);
}

// Negative twin: a device that refuses the bytes (/dev/full) is the
// stream's error, as for its own writes.
TEST(PlanFileTest, GatheredWriteErrorsAreTheStreams) {
  int FD = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (FD < 0)
    GTEST_SKIP() << "no /dev/full here";
  AtomicFileStream OS(FD);
  std::string Part(1 << 16, 'x');
  OS.writeGather({Part, Part});
  EXPECT_TRUE(OS.has_error());
  EXPECT_EQ(OS.error(), std::errc::no_space_on_device);
  OS.clear_error();
}

// `-o /dev/null` writes into the device; renaming a temporary over it
// would replace the device node with a file (as root, for everyone). The
// write happens only once the decision is known to be in place, so a
// regression fails here without touching /dev/null.
TEST(PlanFileTest, DeviceIsWrittenInPlace) {
  if (!llvm::sys::fs::exists("/dev/null"))
    GTEST_SKIP() << "no /dev/null here";
  ASSERT_TRUE(writesInPlace("/dev/null"));
  ASSERT_FALSE(bool(writePlanFile("/dev/null", compiledMixedPlan())));
  llvm::sys::fs::file_status St;
  ASSERT_FALSE(llvm::sys::fs::status("/dev/null", St));
  EXPECT_EQ(St.type(), llvm::sys::fs::file_type::character_file);
  // Negative twins: regular files, absent paths and folders go through a
  // temporary and a rename.
  std::string Path = tempPath("in-place.plan");
  EXPECT_FALSE(writesInPlace(Path));
  ASSERT_FALSE(bool(writePlanFile(Path, compiledMixedPlan())));
  EXPECT_FALSE(writesInPlace(Path));
  EXPECT_FALSE(writesInPlace(llvm::sys::path::parent_path(Path)));
  llvm::sys::fs::remove(Path);
}

// A pipe cannot take a plan (its header is written last, in place): a clear
// error, and the pipe stays a pipe.
TEST(PlanFileTest, PipeIsRefusedAndKept) {
  std::string Path = tempPath("plan.fifo");
  ::unlink(Path.c_str()); // sys::fs::remove leaves pipes
  ASSERT_EQ(::mkfifo(Path.c_str(), 0600), 0);
  // A reader, so opening the pipe for writing does not wait.
  int Reader = ::open(Path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(Reader, 0);
  ASSERT_TRUE(writesInPlace(Path));
  llvm::Error E = writePlanFile(Path, compiledMixedPlan());
  ASSERT_TRUE(bool(E));
  std::string Msg = llvm::toString(std::move(E));
  EXPECT_NE(Msg.find("needs a seekable file"), std::string::npos) << Msg;
  llvm::sys::fs::file_status St;
  ASSERT_FALSE(llvm::sys::fs::status(Path, St));
  EXPECT_EQ(St.type(), llvm::sys::fs::file_type::fifo_file);
  ::close(Reader);
  ::unlink(Path.c_str());
}

TEST(PlanFileTest, WeightBlobAlignsAndZeroFills) {
  WeightBlob B;
  auto Owner = std::make_shared<std::string>("abc");
  EXPECT_EQ(B.append(*Owner, Owner), 0u);
  EXPECT_EQ(B.appendCopy("de"), 256u);
  EXPECT_EQ(B.size(), 258u);
  std::string S = B.str();
  ASSERT_EQ(S.size(), 258u);
  EXPECT_EQ(S.substr(0, 3), "abc");
  EXPECT_EQ(S.substr(3, 253), std::string(253, '\0'));
  EXPECT_EQ(S.substr(256), "de");
}

TEST(PlanFileTest, ReadPlanViewsPageAlignedWeights) {
  Plan P = compiledMixedPlan();
  ASSERT_FALSE(P.Weights.empty());
  std::string Path = tempPath("mapped.plan");
  ASSERT_FALSE(bool(writePlanFile(Path, P)));
  llvm::Expected<Plan> Back = readPlanFile(Path);
  llvm::sys::fs::remove(Path); // the mapping keeps the bytes
  ASSERT_TRUE(bool(Back)) << llvm::toString(Back.takeError());
  ASSERT_EQ(Back->Weights.pieces().size(), 1u);
  EXPECT_EQ(Back->Weights.str(), P.Weights.str());
  EXPECT_EQ(
      reinterpret_cast<uintptr_t>(Back->Weights.pieces()[0].Bytes.data()) %
          4096,
      0u);
}

TEST(PlanFileTest, ApiSaveAndLoad) {
  auto M = CompiledModel::fromPlan(compiledMixedPlan());
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  std::string Path = tempPath("api.plan");
  ASSERT_FALSE(bool((*M)->savePlan(Path)));
  auto Back = CompiledModel::loadPlan(Path);
  ASSERT_TRUE(bool(Back)) << llvm::toString(Back.takeError());
  ASSERT_EQ((*Back)->inputs().size(), 2u);
  EXPECT_EQ((*Back)->inputs()[0].Name, "x");
  EXPECT_EQ((*Back)->outputs()[1].Dims, (std::vector<int64_t>{1, 75}));
  EXPECT_EQ((*Back)->inputIndex("img"), 1);
  EXPECT_EQ((*Back)->stats().Steps, (*M)->stats().Steps);
  llvm::sys::fs::remove(Path);
}

#else
#include "gtest/gtest.h"
TEST(PlanFileTest, NeedsCuda) {
  GTEST_SKIP() << "built without the CUDA toolkit: no GPU runtime";
}
#endif
