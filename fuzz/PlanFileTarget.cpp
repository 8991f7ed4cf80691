//===- PlanFileTarget.cpp - Fuzzing the plan-file reader ------------------===//
//
// Checksums make almost every mutation fail at the header, so each input is
// read twice: as is (the header and checksum checks), and repaired: its
// metadata section (as long as the header says, clipped to the input)
// and whatever follows as the weights get a fresh header with correct
// sizes and checksums, so the field decoder and validatePlan see the
// mutated payload.
//
//===----------------------------------------------------------------------===//
#include "fuzz/FuzzTargets.h"
#include "runtime/cuda/DynamicPlanFile.h"
#include "runtime/cuda/PlanFile.h"
#include <algorithm>
#include <cstring>

namespace solder {
namespace fuzz {

static constexpr size_t HeaderBytes = 64;
static constexpr uint64_t WeightsAlign = 4096;

static uint64_t readU64(llvm::StringRef B, size_t At) {
  uint64_t V = 0;
  if (At + 8 <= B.size())
    std::memcpy(&V, B.data() + At, 8);
  return V;
}

static void putU64(std::string &B, size_t At, uint64_t V) {
  std::memcpy(&B[At], &V, 8);
}

/// The input as a well-formed file around its (mutated) sections; the
/// layout is PlanFile.h's.
static std::string repair(llvm::StringRef In) {
  llvm::StringRef Body =
      In.size() > HeaderBytes ? In.drop_front(HeaderBytes) : llvm::StringRef();
  uint64_t MetaSize = std::min<uint64_t>(readU64(In, 16), Body.size());
  llvm::StringRef Meta = Body.take_front(MetaSize);
  uint64_t Offset =
      (HeaderBytes + MetaSize + WeightsAlign - 1) / WeightsAlign * WeightsAlign;
  // The weights start at their aligned offset when the input reaches it,
  // else right after the metadata.
  llvm::StringRef Weights =
      In.size() >= Offset ? In.drop_front(Offset) : Body.drop_front(MetaSize);
  std::string Out(Offset + Weights.size(), '\0');
  std::memcpy(&Out[0], "SLDRPLAN", 8);
  uint32_t Version = PlanFormatVersion;
  std::memcpy(&Out[8], &Version, 4);
  putU64(Out, 16, MetaSize);
  putU64(Out, 24, Weights.size());
  putU64(Out, 32, planChecksum(Meta));
  putU64(Out, 40, planChecksum(Weights));
  // std::copy: an empty section may have a null data pointer, which
  // memcpy must not get.
  std::copy(Meta.begin(), Meta.end(), Out.begin() + HeaderBytes);
  std::copy(Weights.begin(), Weights.end(), Out.begin() + Offset);
  return Out;
}

static std::string roundTrip(llvm::StringRef Bytes) {
  llvm::Expected<Plan> P = deserializePlan(Bytes);
  if (!P) {
    llvm::consumeError(P.takeError());
    return "";
  }
  std::string Written = serializePlan(*P);
  llvm::Expected<Plan> Back = deserializePlan(Written);
  if (!Back)
    return "a plan that was read does not read back after writing: " +
           llvm::toString(Back.takeError());
  if (serializePlan(*Back) != Written)
    return "a plan written, read and written again changed";
  return "";
}

/// The same for dynamic plans (DynamicPlanFile.h).
static std::string dynamicRoundTrip(llvm::StringRef Bytes) {
  llvm::Expected<DynamicPlan> P = deserializeDynamicPlan(Bytes);
  if (!P) {
    llvm::consumeError(P.takeError());
    return "";
  }
  std::string Written = serializeDynamicPlan(*P);
  llvm::Expected<DynamicPlan> Back = deserializeDynamicPlan(Written);
  if (!Back)
    return "a dynamic plan that was read does not read back after writing: " +
           llvm::toString(Back.takeError());
  if (serializeDynamicPlan(*Back) != Written)
    return "a dynamic plan written, read and written again changed";
  return "";
}

/// Bytes with the dynamic plan's magic, version and a valid trailing
/// checksum, so mutations reach the header and model sections.
static std::string repairDynamic(llvm::StringRef Bytes) {
  std::string Out = "SOLDERDP";
  Out += std::string("\x01\0\0\0", 4);
  Out += Bytes.drop_front(std::min<size_t>(Bytes.size(), 12)).str();
  uint64_t Sum = planChecksum(Out);
  for (int I = 0; I < 8; ++I)
    Out.push_back(char(Sum >> (8 * I)));
  return Out;
}

std::string planFile(llvm::StringRef Bytes) {
  if (std::string Broken = roundTrip(Bytes); !Broken.empty())
    return Broken;
  if (std::string Broken = roundTrip(repair(Bytes)); !Broken.empty())
    return Broken;
  if (std::string Broken = dynamicRoundTrip(Bytes); !Broken.empty())
    return Broken;
  return dynamicRoundTrip(repairDynamic(Bytes));
}

} // namespace fuzz
} // namespace solder
