//===- GpuArchCacheTest.cpp - The cached answer to "which GPU is this" ----===//
//
// CPU-only: thisMachineArch keeps NVML's answer beside the kernel cache,
// keyed by the driver's /proc identity. A fake driver folder stands in for
// /proc/driver/nvidia; the cached arch is one no test machine has (sm_87),
// so getting it back proves the cache answered, and its twin shows a
// changed driver is asked again.
//
//===----------------------------------------------------------------------===//
#if SOLDER_HAVE_CUDA
#include "runtime/cuda/CudaSupport.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"
#include <cstdlib>
#include <optional>
#include <string>

using namespace solder;

namespace {

void writeText(const llvm::Twine &Path, llvm::StringRef Text) {
  std::error_code EC;
  llvm::raw_fd_ostream OS(Path.str(), EC);
  ASSERT_FALSE(EC) << Path.str();
  OS << Text;
}

class GpuArchCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<128> Root;
    ASSERT_FALSE(
        llvm::sys::fs::createUniqueDirectory("solder-arch-cache", Root));
    Dir = std::string(Root);
    Driver = Dir + "/driver";
    Cache = Dir + "/cache";
    ASSERT_FALSE(
        llvm::sys::fs::create_directories(Driver + "/gpus/0000:01:00.0"));
    ASSERT_FALSE(llvm::sys::fs::create_directories(Cache));
    writeText(Driver + "/version", "NVRM version: Kernel Module 580.95\n");
    writeText(Driver + "/gpus/0000:01:00.0/information",
              "Model: NVIDIA H100 80GB HBM3\nGPU UUID: GPU-0123\n");
    // The cache is bypassed under CUDA_VISIBLE_DEVICES (it reorders GPUs).
    if (const char *V = std::getenv("CUDA_VISIBLE_DEVICES"))
      Visible = V;
    ::unsetenv("CUDA_VISIBLE_DEVICES");
  }
  void TearDown() override {
    if (Visible)
      ::setenv("CUDA_VISIBLE_DEVICES", Visible->c_str(), 1);
    llvm::sys::fs::remove_directories(Dir);
  }
  std::string Dir, Driver, Cache;
  std::optional<std::string> Visible;
};

TEST_F(GpuArchCacheTest, CachedArchAnswersWhileTheDriverIsTheSame) {
  std::string Id = driverIdentity(Driver);
  ASSERT_NE(Id.find("580.95"), std::string::npos);
  ASSERT_NE(Id.find("GPU-0123"), std::string::npos);
  writeText(Cache + "/gpu-arch.txt", "sm_87\n" + Id);
  llvm::Expected<std::string> Arch = thisMachineArch(Cache, Driver);
  ASSERT_TRUE(bool(Arch)) << llvm::toString(Arch.takeError());
  EXPECT_EQ(*Arch, "sm_87");
}

TEST_F(GpuArchCacheTest, ChangedDriverIsAskedAgain) {
  writeText(Cache + "/gpu-arch.txt", "sm_87\n" + driverIdentity(Driver));
  writeText(Driver + "/version", "NVRM version: Kernel Module 590.10\n");
  llvm::Expected<std::string> Arch = thisMachineArch(Cache, Driver);
  if (!Arch) { // no GPU here: NVML and CUDA both fail, as they should
    llvm::consumeError(Arch.takeError());
    return;
  }
  EXPECT_NE(*Arch, "sm_87");
  // A GPU answered: its arch is now kept under the new identity.
  auto B = llvm::MemoryBuffer::getFile(Cache + "/gpu-arch.txt");
  ASSERT_TRUE(bool(B));
  EXPECT_EQ((*B)->getBuffer(), *Arch + "\n" + driverIdentity(Driver));
}

TEST_F(GpuArchCacheTest, ChangedGpuListIsAskedAgain) {
  writeText(Cache + "/gpu-arch.txt", "sm_87\n" + driverIdentity(Driver));
  ASSERT_FALSE(
      llvm::sys::fs::create_directories(Driver + "/gpus/0000:02:00.0"));
  writeText(Driver + "/gpus/0000:02:00.0/information",
            "Model: NVIDIA H200\nGPU UUID: GPU-4567\n");
  llvm::Expected<std::string> Arch = thisMachineArch(Cache, Driver);
  if (!Arch) {
    llvm::consumeError(Arch.takeError());
    return;
  }
  EXPECT_NE(*Arch, "sm_87");
}

TEST_F(GpuArchCacheTest, NoDriverFilesNoIdentity) {
  EXPECT_EQ(driverIdentity(Dir + "/missing"), "");
  llvm::sys::fs::remove_directories(Driver + "/gpus");
  EXPECT_EQ(driverIdentity(Driver), "");
}

} // namespace
#endif
