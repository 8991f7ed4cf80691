//===- PlanFile.h - Plans on disk -------------------------------*- C++ -*-===//
//
// A plan file holds one Plan: kernels (sources and cubins with their arch),
// library choices, the memory plan, the steps, the executed graph's IR
// (large constants elided) and the weights as a binary section.
//
//   offset  size  what
//   0       8     magic "SLDRPLAN"
//   8       4     format version (PlanFormatVersion), little-endian
//   12      4     reserved, 0
//   16      8     metadata size M
//   24      8     weights size W
//   32      8     planChecksum of the metadata
//   40      8     planChecksum of the weights
//   48      16    reserved, 0
//   64      M     metadata: the Plan's fields but the weights, in a fixed
//                 order
//   ...           zeros up to the next 4096-byte boundary A
//   A       W     the weights blob
//
// The weights are page-aligned so a mapped plan file serves them in place
// (no copy on load). Files are written to a temporary name and renamed, so
// a reader never sees half a plan; the weights stream from their sources
// to the file. Reading refuses another format version, a bad magic, a size
// or checksum mismatch, with a message saying which.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_RUNTIME_CUDA_PLANFILE_H
#define SOLDER_RUNTIME_CUDA_PLANFILE_H

#include "runtime/cuda/Plan.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include <memory>
#include <string>
#include <vector>

namespace solder {

/// 4: matmul epilogues and separate C, fused convolutions, step group ids,
/// Plan::Groups (with operand and result buffers) and Plan::Decisions.
/// 5: pointer-array batched matmuls (GemmConfig::BatchDims), the plan's
/// precision, tuned library algorithms (Plan::TunedOn).
/// 6: channels-last convolutions (ConvConfig::Nhwc).
/// 7: kernels' tensor maps (PlanKernel::TensorMaps).
/// 8: cuDNN attention calls (Plan::Attentions), dependent launches
/// (PlanKernel::DependentLaunch).
/// 9: kernels sharing another's compiled function (PlanKernel::Symbol).
/// 10: kernel scratch (BufferSpace::Scratch, Plan::ScratchBytes) and
/// cooperative launches (PlanKernel::Cooperative).
/// 11: counts kernels take by value (PlanKernel::Counts).
/// 12: convolutions as cuDNN operation graphs (ConvConfig::Graph).
constexpr uint32_t PlanFormatVersion = 12;

/// 64-bit checksum of plan bytes: four interleaved lanes of a
/// multiply-xorshift step per 8-byte word (each step a bijection of its
/// lane's state, so any single changed word changes the result), combined
/// at the end. Streaming, so weights are checksummed while they are written;
/// four lanes keep it well above disk speed (gigabytes of weights).
class PlanChecksum {
public:
  void update(llvm::StringRef Bytes);
  uint64_t finish() const;

private:
  uint64_t Lanes[4] = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL,
                       0xa4093822299f31d0ULL, 0x082efa98ec4e6c89ULL};
  char Tail[32];
  size_t TailBytes = 0;
  uint64_t Total = 0;
};
uint64_t planChecksum(llvm::StringRef Bytes);

/// Writes consecutive byte ranges of a file, in order.
using PartWriter = llvm::function_ref<void(llvm::ArrayRef<llvm::StringRef>)>;
/// Appends Bytes cut into parts of at most 256 KiB.
void appendParts(llvm::StringRef Bytes, std::vector<llvm::StringRef> &Parts);
/// Adds Parts to Sum (in order) while Write writes them, in batches of a
/// few MiB; a large blob is checksummed on a second thread meanwhile.
void checksumAndWrite(llvm::ArrayRef<llvm::StringRef> Parts, PlanChecksum &Sum,
                      PartWriter Write);
/// Writes a file's bytes: the small pieces through OS, the large byte
/// ranges through Write (gathered into few system calls for a file).
using FileEmitter =
    llvm::function_ref<void(llvm::raw_pwrite_stream &OS, PartWriter Write)>;
/// The bytes Emit writes, in memory (tests and in-memory use).
std::string emitToString(FileEmitter Emit);
/// Emit's bytes written to Path as writeAtomically writes (SizeHint
/// likewise), its large ranges through AtomicFileStream::writeGather.
llvm::Error emitToFile(llvm::StringRef Path, FileEmitter Emit,
                       uint64_t SizeHint = 0);

/// The plan file's bytes (tests and in-memory use; files are streamed).
std::string serializePlan(const Plan &P);
/// Owner, when given, keeps Bytes alive for the plan's lifetime and the
/// weights are used in place; otherwise they are copied.
llvm::Expected<Plan>
deserializePlan(llvm::StringRef Bytes,
                std::shared_ptr<const void> Owner = nullptr);

llvm::Error writePlanFile(llvm::StringRef Path, const Plan &P);

/// The stream writeAtomically prints to. writeGather sends many byte ranges
/// in one writev(2): a file of weights leaves in a few calls of megabytes
/// each rather than one call per buffer's worth (each call on ext4 takes
/// the inode lock and stamps the file's times). Errors surface as the
/// stream's, like those of write.
class AtomicFileStream final : public llvm::raw_fd_ostream {
public:
  explicit AtomicFileStream(int FD)
      : raw_fd_ostream(FD, /*shouldClose=*/true) {}
  void writeGather(llvm::ArrayRef<llvm::StringRef> Parts);
};

/// Writes what Emit prints to a temporary file beside Path, then renames it
/// over Path: readers see the old file or the whole new one (a signal
/// removes the temporary; SIGKILL may leave it, never a partial Path).
/// SizeHint, when known, is the file's final size: its blocks are reserved
/// first, and a disk without room for them fails before any write. A Path
/// that is a device or a pipe (-o /dev/null) is written in place instead:
/// renaming over it would replace the device with a file.
/// Whether writeAtomically writes Path in place: it exists and is neither a
/// regular file nor a folder.
bool writesInPlace(llvm::StringRef Path);
llvm::Error writeAtomically(llvm::StringRef Path,
                            llvm::function_ref<void(AtomicFileStream &)> Emit,
                            uint64_t SizeHint = 0);
/// Maps the file; the plan's weights view the mapping.
llvm::Expected<Plan> readPlanFile(llvm::StringRef Path);

/// True when the file starts with the plan magic or the dynamic plan magic
/// (DynamicPlanFile.h): to tell plans from ONNX models.
bool looksLikePlanFile(llvm::StringRef Path);

} // namespace solder

#endif
