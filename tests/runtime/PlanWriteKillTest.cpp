//===- PlanWriteKillTest.cpp - A killed plan write leaves no partial plan -===//
//
// A child process writes a plan with 1 GiB of weights (zero pages of an
// anonymous mapping: no memory, no disk beyond what it writes before it is
// killed) and is killed as soon as its temporary file has bytes. Whatever
// the timing, the plan path then holds nothing or a whole plan; SIGTERM
// also removes the temporary.
//
//===----------------------------------------------------------------------===//
#if SOLDER_HAVE_CUDA
#include "runtime/cuda/PlanFile.h"
#include "tests/TestFiles.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "gtest/gtest.h"
#include <chrono>
#include <csignal>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace solder;
using solder::testing::filesIn;
using solder::testing::TempDir;

namespace {

/// Forks a writer of a plan with WeightBytes of zeros to Dir/m.plan, kills
/// it with Signal once its temporary exists, and returns the files left.
std::vector<std::string> killWriter(llvm::StringRef Dir, int Signal) {
  constexpr size_t WeightBytes = size_t(1) << 30;
  void *Zeros = mmap(nullptr, WeightBytes, PROT_READ,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  EXPECT_NE(Zeros, MAP_FAILED);
  if (Zeros == MAP_FAILED)
    return {};
  std::string Path = (Dir + "/m.plan").str();
  pid_t Child = fork();
  if (Child == 0) {
    Plan P;
    P.ModelName = "killed";
    P.Arch = "sm_90";
    P.Weights.append(
        llvm::StringRef(static_cast<const char *>(Zeros), WeightBytes),
        nullptr);
    llvm::Error E = writePlanFile(Path, P);
    _exit(E ? 1 : 0);
  }
  // Kill once the temporary has bytes: the writer registers it for removal
  // on a signal between creating it and writing to it.
  auto Deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  auto Writing = [&] {
    std::vector<std::string> Files = filesIn(Dir);
    uint64_t Size = 0;
    return Files.size() == 1 &&
           !llvm::sys::fs::file_size((Dir + "/" + Files[0]).str(), Size) &&
           Size > 0;
  };
  while (!Writing() && std::chrono::steady_clock::now() < Deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  kill(Child, Signal);
  int Status = 0;
  waitpid(Child, &Status, 0);
  munmap(Zeros, WeightBytes);
  return filesIn(Dir);
}

/// True when the only file is a whole plan (the writer won the race).
bool isWholePlan(llvm::StringRef Dir, const std::vector<std::string> &Files) {
  if (Files.size() != 1 || Files[0] != "m.plan")
    return false;
  llvm::Expected<Plan> P = readPlanFile((Dir + "/m.plan").str());
  if (!P) {
    ADD_FAILURE() << "a partial plan was left: "
                  << llvm::toString(P.takeError());
    return false;
  }
  return true;
}

TEST(PlanWriteKill, SigtermRemovesTheTemporary) {
  TempDir D("solder-kill");
  std::vector<std::string> Left = killWriter(D.Path, SIGTERM);
  if (!Left.empty() && isWholePlan(D.Path, Left))
    GTEST_SKIP() << "the write finished before the signal";
  EXPECT_TRUE(Left.empty()) << "left " << Left.front();
}

TEST(PlanWriteKill, SigkillLeavesNoPartialPlan) {
  TempDir D("solder-kill");
  std::vector<std::string> Left = killWriter(D.Path, SIGKILL);
  if (isWholePlan(D.Path, Left))
    GTEST_SKIP() << "the write finished before the signal";
  // At most the temporary is left (SIGKILL cannot be caught), never a
  // file under the plan's name.
  for (const std::string &F : Left)
    EXPECT_TRUE(llvm::StringRef(F).startswith("m.plan.tmp-")) << F;
}

} // namespace
#endif
