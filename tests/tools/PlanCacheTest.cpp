//===- PlanCacheTest.cpp - `solder compile`'s plan cache ------------------===//
//
// The cache itself (keys, hits as hard links, refusals, eviction) and the
// compile command using it: a second compile of the same model and
// arguments is the first one's plan; a changed model, external-data file,
// argument or plan compiles anew.
//
//===----------------------------------------------------------------------===//
// The plan cache is part of the GPU commands: built with the CUDA toolkit.
#if SOLDER_HAVE_CUDA
#include "tools/PlanCache.h"
#include "tests/frontend/ModelBuilder.h"
#include "tests/tools/CliTestUtils.h"
#include "llvm/Support/FileSystem.h"
#include "gtest/gtest.h"
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace solder;
using namespace solder::clitest;

namespace {

void writeFile(const std::string &Path, const std::string &Bytes) {
  std::ofstream(Path, std::ios::binary | std::ios::trunc) << Bytes;
}

uint64_t inodeOf(const std::string &Path) {
  struct stat St;
  return ::stat(Path.c_str(), &St) == 0 ? uint64_t(St.st_ino) : 0;
}

/// Overwrites one byte of Path in place (the inode stays).
void flipByteInPlace(const std::string &Path, off_t At) {
  int FD = ::open(Path.c_str(), O_RDWR);
  ASSERT_GE(FD, 0);
  char C = 0;
  ASSERT_EQ(::pread(FD, &C, 1, At), 1);
  C = char(C ^ 0x5a);
  ASSERT_EQ(::pwrite(FD, &C, 1, At), 1);
  ::close(FD);
}

PlanCacheKey key(const std::string &Text) {
  return PlanCacheKey{Text, std::string(32, Text.empty() ? '0' : Text[0])};
}

std::vector<std::string> filesIn(const std::string &Dir) {
  std::vector<std::string> Names;
  std::error_code EC;
  for (sys::fs::directory_iterator It(Dir, EC), End; It != End && !EC;
       It.increment(EC))
    Names.push_back(sys::path::filename(It->path()).str());
  llvm::sort(Names);
  return Names;
}

TEST(PlanCacheArgs, AllButTheOutput) {
  const char *Argv[] = {"solder", "compile", "m.onnx", "-o",         "a.plan",
                        "--arch", "sm_90",   "-o=b",   "--o",        "c",
                        "--o=d",  "--shape", "x=1",    "--no-fusion"};
  std::optional<std::vector<std::string>> A = planCacheArgs(Argv);
  ASSERT_TRUE(A);
  EXPECT_EQ(*A,
            (std::vector<std::string>{"compile", "m.onnx", "--arch", "sm_90",
                                      "--shape", "x=1", "--no-fusion"}));
}

TEST(PlanCacheArgs, ResponseFilesAreNotKeyed) {
  // Their content, not their name, is the arguments.
  const char *Argv[] = {"solder", "compile", "@options", "-o", "a.plan"};
  EXPECT_FALSE(planCacheArgs(Argv));
}

TEST(PlanCacheKeyTest, ModelAndExternalBytesEnterTheKey) {
  TempDir Tmp;
  std::string Model = Tmp.path("m.onnx"), W = Tmp.path("w.bin");
  writeFile(Model, "model bytes");
  writeFile(W, "weights");
  std::vector<std::string> Args = {"compile", "m.onnx"};
  auto K = [&](std::vector<std::string> Ext = {"w.bin"},
               std::vector<std::string> A = {"compile", "m.onnx"}) {
    return planCacheKey(A, Model, Ext, "sm_90", "13.0");
  };
  std::optional<PlanCacheKey> First = K();
  ASSERT_TRUE(First);
  EXPECT_EQ(First->Name.size(), 32u);
  EXPECT_EQ(K()->Name, First->Name);
  EXPECT_EQ(K()->Text, First->Text);
  writeFile(W, "weightz");
  EXPECT_NE(K()->Name, First->Name);
  writeFile(W, "weights");
  writeFile(Model, "model bytez");
  EXPECT_NE(K()->Name, First->Name);
  writeFile(Model, "model bytes");
  EXPECT_NE(K({"w.bin"}, {"compile", "m.onnx", "--no-fusion"})->Name,
            First->Name);
  EXPECT_NE(planCacheKey(Args, Model, {"w.bin"}, "sm_80", "13.0")->Name,
            First->Name);
  EXPECT_EQ(K()->Name, First->Name);
}

TEST(PlanCacheKeyTest, UnreadableIngredientsMeanNoKey) {
  TempDir Tmp;
  std::string Model = Tmp.path("m.onnx");
  writeFile(Model, "model bytes");
  writeFile(Tmp.path("w.bin"), "weights");
  std::vector<std::string> Args = {"compile", "m.onnx"};
  EXPECT_TRUE(planCacheKey(Args, Model, {"w.bin"}, "sm_90", ""));
  // Outside the model's folder, missing, or no model: the compile runs
  // uncached and says what is wrong.
  EXPECT_FALSE(planCacheKey(Args, Model, {"../w.bin"}, "sm_90", ""));
  EXPECT_FALSE(planCacheKey(Args, Model, {"/etc/passwd"}, "sm_90", ""));
  EXPECT_FALSE(planCacheKey(Args, Model, {"gone.bin"}, "sm_90", ""));
  EXPECT_FALSE(planCacheKey(Args, Tmp.path("gone.onnx"), {}, "sm_90", ""));
}

TEST(PlanCacheStore, AHitLinksTheStoredPlan) {
  TempDir Tmp;
  PlanCache Cache(Tmp.path("plans"));
  std::string A = Tmp.path("a.plan"), B = Tmp.path("b.plan");
  writeFile(A, std::string(5000, 'p'));
  PlanCacheKey K = key("one");
  EXPECT_FALSE(Cache.serve(K, B));
  EXPECT_FALSE(sys::fs::exists(B));
  Cache.store(K, A, "summary one");
  std::optional<std::string> Hit = Cache.serve(K, B);
  ASSERT_TRUE(Hit);
  EXPECT_EQ(*Hit, "summary one");
  EXPECT_EQ(inodeOf(B), inodeOf(A));
  // Served to the file that already is the entry: kept, nothing left over.
  EXPECT_TRUE(Cache.serve(K, B));
  EXPECT_EQ(filesIn(Tmp.path()),
            (std::vector<std::string>{"a.plan", "b.plan", "plans"}));
  EXPECT_EQ(filesIn(Tmp.path("plans")).size(), 2u);
}

TEST(PlanCacheStore, AnotherKeyWithTheSameNameMisses) {
  TempDir Tmp;
  PlanCache Cache(Tmp.path("plans"));
  std::string A = Tmp.path("a.plan");
  writeFile(A, "plan");
  Cache.store(key("one"), A, "s");
  // Same 32-digit name ('o...'), other text: the whole text must match.
  EXPECT_FALSE(Cache.serve(key("other"), Tmp.path("b.plan")));
  EXPECT_FALSE(sys::fs::exists(Tmp.path("b.plan")));
}

TEST(PlanCacheStore, APlanChangedInPlaceIsNotServed) {
  TempDir Tmp;
  PlanCache Cache(Tmp.path("plans"));
  std::string A = Tmp.path("a.plan");
  writeFile(A, std::string(5000, 'p'));
  PlanCacheKey K = key("one");
  Cache.store(K, A, "s");
  // The output shares the entry's inode: changing it changes the entry.
  flipByteInPlace(A, 4000);
  EXPECT_FALSE(Cache.serve(K, Tmp.path("b.plan")));
  EXPECT_FALSE(sys::fs::exists(Tmp.path("b.plan")));
  EXPECT_FALSE(Cache.serve(K, A));
  // No temporary left beside the output.
  EXPECT_EQ(filesIn(Tmp.path()), (std::vector<std::string>{"a.plan", "plans"}));
}

TEST(PlanCacheStore, EvictsTheLeastRecentlyUsedBeyondItsLimit) {
  TempDir Tmp;
  PlanCache Cache(Tmp.path("plans"), /*LimitBytes=*/2500);
  for (const char *Name : {"a", "b", "c"})
    writeFile(Tmp.path(std::string(Name) + ".plan"), std::string(1000, *Name));
  Cache.store(key("1"), Tmp.path("a.plan"), "");
  Cache.store(key("2"), Tmp.path("b.plan"), "");
  // "1" was used after "2".
  std::string Record2 = Tmp.path("plans/" + key("2").Name + ".key");
  struct timespec Old[2] = {{1000, 0}, {1000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, Record2.c_str(), Old, 0), 0);
  ASSERT_TRUE(Cache.serve(key("1"), Tmp.path("a2.plan")));
  Cache.store(key("3"), Tmp.path("c.plan"), "");
  EXPECT_TRUE(Cache.serve(key("1"), Tmp.path("x.plan")));
  EXPECT_FALSE(Cache.serve(key("2"), Tmp.path("y.plan")));
  EXPECT_TRUE(Cache.serve(key("3"), Tmp.path("z.plan")));
  EXPECT_EQ(filesIn(Tmp.path("plans")).size(), 4u);
}

TEST(PlanCacheStore, NoRoomForTheCacheIsNoCache) {
  TempDir Tmp;
  // A folder that cannot be created (true even for root).
  PlanCache Cache("/proc/self/solder-plans");
  std::string A = Tmp.path("a.plan");
  writeFile(A, "plan");
  Cache.store(key("one"), A, "s");
  EXPECT_FALSE(Cache.serve(key("one"), Tmp.path("b.plan")));
  EXPECT_EQ(filesIn(Tmp.path()), (std::vector<std::string>{"a.plan"}));
}

/// `solder compile MODEL ARGS... -o OUT` with the cache in Cache.
CliResult compile(const std::string &Model, const std::string &Cache,
                  const std::string &Out, std::vector<std::string> Extra = {}) {
  std::vector<std::string> Args = {"compile",     Model, "--arch", "sm_90",
                                   "--cache-dir", Cache, "-o",     Out};
  Args.insert(Args.end(), Extra.begin(), Extra.end());
  return runSolder(Args, /*OpensNvrtc=*/true);
}

const char *const CacheHit = "the plan cache's";

TEST(PlanCacheCli, ASecondCompileIsTheFirstPlan) {
  if (!haveGpuCommands())
    GTEST_SKIP() << "built without the CUDA toolkit";
  TempDir Tmp;
  std::string Model = dataPath("fusion_chain.onnx"), Cache = Tmp.path("c");
  CliResult A = compile(Model, Cache, Tmp.path("a.plan"));
  ASSERT_EQ(A.Code, 0) << A.Err;
  EXPECT_FALSE(contains(A.Out, CacheHit)) << A.Out;
  CliResult B = compile(Model, Cache, Tmp.path("b.plan"));
  ASSERT_EQ(B.Code, 0) << B.Err;
  EXPECT_TRUE(contains(B.Out, CacheHit)) << B.Out;
  EXPECT_EQ(inodeOf(Tmp.path("b.plan")), inodeOf(Tmp.path("a.plan")));
  // The summary of the compile that wrote it (but the name and the time).
  StringRef Stats = StringRef(A.Out).split(": ").second.split('\n').first;
  EXPECT_TRUE(contains(B.Out, Tmp.path("b.plan") + ": " + Stats.str()))
      << A.Out << B.Out;
}

TEST(PlanCacheCli, OtherArgumentsOrNoPlanCacheCompileAnew) {
  if (!haveGpuCommands())
    GTEST_SKIP() << "built without the CUDA toolkit";
  TempDir Tmp;
  std::string Model = dataPath("fusion_chain.onnx"), Cache = Tmp.path("c");
  ASSERT_EQ(compile(Model, Cache, Tmp.path("a.plan")).Code, 0);
  CliResult Unfused =
      compile(Model, Cache, Tmp.path("u.plan"), {"--no-fusion"});
  ASSERT_EQ(Unfused.Code, 0) << Unfused.Err;
  EXPECT_FALSE(contains(Unfused.Out, CacheHit)) << Unfused.Out;
  EXPECT_NE(readFile(Tmp.path("u.plan")), readFile(Tmp.path("a.plan")));
  CliResult Fresh =
      compile(Model, Cache, Tmp.path("f.plan"), {"--no-plan-cache"});
  ASSERT_EQ(Fresh.Code, 0) << Fresh.Err;
  EXPECT_FALSE(contains(Fresh.Out, CacheHit)) << Fresh.Out;
  EXPECT_NE(inodeOf(Tmp.path("f.plan")), inodeOf(Tmp.path("a.plan")));
  EXPECT_EQ(readFile(Tmp.path("f.plan")), readFile(Tmp.path("a.plan")));
}

TEST(PlanCacheCli, ChangedExternalWeightsCompileAnew) {
  if (!haveGpuCommands())
    GTEST_SKIP() << "built without the CUDA toolkit";
  TempDir Tmp;
  // y = x + w, w ([4] f32) in w.bin beside the model.
  solder::testing::ModelBuilder B(13);
  B.input("x", {"4"});
  onnx::TensorProto *W = B.G->add_initializer();
  W->set_name("w");
  W->set_data_type(onnx::TensorProto::FLOAT);
  W->add_dims(4);
  W->set_data_location(onnx::TensorProto::EXTERNAL);
  onnx::StringStringEntryProto *Loc = W->add_external_data();
  Loc->set_key("location");
  Loc->set_value("w.bin");
  B.node("Add", {"x", "w"}, {"y"});
  B.output("y");
  std::string Model = Tmp.path("m.onnx"), Cache = Tmp.path("c");
  writeFile(Model, B.bytes());
  float First[4] = {1, 2, 3, 4}, Second[4] = {1, 2, 3, 5};
  writeFile(Tmp.path("w.bin"), std::string((const char *)First, 16));
  ASSERT_EQ(compile(Model, Cache, Tmp.path("a.plan")).Code, 0);
  CliResult Same = compile(Model, Cache, Tmp.path("b.plan"));
  EXPECT_TRUE(contains(Same.Out, CacheHit)) << Same.Out << Same.Err;
  writeFile(Tmp.path("w.bin"), std::string((const char *)Second, 16));
  CliResult Changed = compile(Model, Cache, Tmp.path("c.plan"));
  ASSERT_EQ(Changed.Code, 0) << Changed.Err;
  EXPECT_FALSE(contains(Changed.Out, CacheHit)) << Changed.Out;
  EXPECT_NE(readFile(Tmp.path("c.plan")), readFile(Tmp.path("a.plan")));
  ASSERT_EQ(compile(Model, Cache, Tmp.path("d.plan"), {"--no-plan-cache"}).Code,
            0);
  EXPECT_EQ(readFile(Tmp.path("c.plan")), readFile(Tmp.path("d.plan")));
}

TEST(PlanCacheCli, APlanChangedThroughItsOutputIsNotServed) {
  if (!haveGpuCommands())
    GTEST_SKIP() << "built without the CUDA toolkit";
  TempDir Tmp;
  std::string Model = dataPath("fusion_chain.onnx"), Cache = Tmp.path("c");
  ASSERT_EQ(compile(Model, Cache, Tmp.path("a.plan")).Code, 0);
  std::string Original = readFile(Tmp.path("a.plan"));
  // Within the same clock tick as the write, as a test or a script may.
  flipByteInPlace(Tmp.path("a.plan"), off_t(Original.size() - 8));
  CliResult B = compile(Model, Cache, Tmp.path("b.plan"));
  ASSERT_EQ(B.Code, 0) << B.Err;
  EXPECT_FALSE(contains(B.Out, CacheHit)) << B.Out;
  EXPECT_EQ(readFile(Tmp.path("b.plan")), Original);
  // The fresh plan took the entry's place.
  EXPECT_TRUE(
      contains(compile(Model, Cache, Tmp.path("c.plan")).Out, CacheHit));
  EXPECT_EQ(inodeOf(Tmp.path("c.plan")), inodeOf(Tmp.path("b.plan")));
}

} // namespace

#endif // SOLDER_HAVE_CUDA
