//===- TestOnnxCommand.cpp - `solder test-onnx DIR...` --------------------===//
//
// Runs ONNX backend-test folders (model.onnx + test_data_set_*/input_K.pb,
// output_K.pb) and compares outputs with the ONNX runner's tolerances (see
// Tolerances.h). A test is skipped, before import, when its model uses an op
// the frontend does not import or a dtype outside the supported set; a
// failing test whose model uses a legacy feature solder refuses by design
// (pre-opset-7 `broadcast` attribute, training-mode Dropout) is counted as
// "refused (legacy)", a kind of skip. Tests run on a small thread pool;
// results are printed in test order once all are done.
//
//===----------------------------------------------------------------------===//
#include "frontend/ModelSummary.h"
#include "frontend/OnnxImporter.h"
#include "tools/Backend.h"
#include "tools/CommandUtils.h"
#include "tools/Commands.h"
#include "tools/Compare.h"
#include "tools/Tolerances.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>

using namespace llvm;

namespace solder {

static cl::SubCommand TestOnnxCmd("test-onnx",
                                  "Run ONNX backend test folders and compare "
                                  "with their expected outputs");
static cl::OptionCategory TestOnnxCat("test-onnx options");
static cl::list<std::string> TestDirs(cl::Positional, cl::OneOrMore,
                                      cl::desc("<test dir or suite dir>..."),
                                      cl::sub(TestOnnxCmd),
                                      cl::cat(TestOnnxCat));
static cl::opt<std::string>
    TestBackend("backend", cl::init("reference"), cl::value_desc("name"),
                cl::desc("Where to run: reference (CPU) or cuda"),
                cl::sub(TestOnnxCmd), cl::cat(TestOnnxCat));
static cl::opt<bool>
    TestVerbose("verbose",
                cl::desc("Also list passing, skipped and refused tests with "
                         "reasons"),
                cl::sub(TestOnnxCmd), cl::cat(TestOnnxCat));
static cl::opt<std::string>
    TestFilter("filter", cl::value_desc("regex"),
               cl::desc("Only run tests whose <suite>/<test> matches"),
               cl::sub(TestOnnxCmd), cl::cat(TestOnnxCat));
static cl::opt<unsigned> TestJobs("jobs", cl::init(2),
                                  cl::desc("Tests run in parallel"),
                                  cl::sub(TestOnnxCmd), cl::cat(TestOnnxCat));
static cl::opt<bool> TestNoOptimize("no-optimize",
                                    cl::desc("Run graphs as imported, "
                                             "without the pass pipeline"),
                                    cl::sub(TestOnnxCmd), cl::cat(TestOnnxCat));

static FusionFlags TestFusion(TestOnnxCmd, TestOnnxCat);
static PrecisionFlags TestPrecision(TestOnnxCmd, TestOnnxCat);
static LimitFlags TestLimits(TestOnnxCmd, TestOnnxCat);

cl::SubCommand &testOnnxSubCommand() { return TestOnnxCmd; }

namespace {
struct TestCase {
  std::string Suite, Name, Dir;
  std::string id() const { return Suite + "/" + Name; }
};

enum class Outcome { Pass, Fail, Skip, Legacy };

struct TestResult {
  Outcome Result = Outcome::Pass;
  /// Why it failed or was skipped; for a pass, how it was run (or "").
  std::string Reason;
};

struct SuiteCounts {
  unsigned Passed = 0, Failed = 0, Skipped = 0, Legacy = 0;
};
} // namespace

static bool hasModel(StringRef Dir) {
  SmallString<256> P(Dir);
  sys::path::append(P, "model.onnx");
  return sys::fs::exists(P);
}

/// Sorted names of the sub-folders of Dir.
static std::vector<std::string> listFolders(StringRef Dir, StringRef Prefix) {
  std::vector<std::string> Names;
  std::error_code EC;
  for (sys::fs::directory_iterator It(Dir, EC), End; It != End && !EC;
       It.increment(EC))
    if (It->type() == sys::fs::file_type::directory_file) {
      StringRef Name = sys::path::filename(It->path());
      if (Name.startswith(Prefix))
        Names.push_back(Name.str());
    }
  std::sort(Names.begin(), Names.end());
  return Names;
}

static Expected<std::vector<TestCase>>
discoverTests(ArrayRef<std::string> Dirs) {
  std::vector<TestCase> Tests;
  for (const std::string &D : Dirs) {
    SmallString<256> Dir(D);
    sys::path::remove_dots(Dir, /*remove_dot_dot=*/true);
    while (Dir.size() > 1 && sys::path::is_separator(Dir.back()))
      Dir.pop_back();
    if (!sys::fs::is_directory(Dir))
      return createStringError(inconvertibleErrorCode(),
                               "'" + D + "' is not a folder");
    if (hasModel(Dir)) {
      SmallString<256> Abs(Dir);
      sys::fs::make_absolute(Abs);
      StringRef Parent = sys::path::filename(sys::path::parent_path(Abs));
      Tests.push_back(
          {Parent.str(), sys::path::filename(Dir).str(), Dir.str().str()});
      continue;
    }
    SmallString<256> Abs(Dir);
    sys::fs::make_absolute(Abs);
    std::string Suite = sys::path::filename(Abs).str();
    size_t Before = Tests.size();
    for (const std::string &Name : listFolders(Dir, "")) {
      SmallString<256> Sub(Dir);
      sys::path::append(Sub, Name);
      if (hasModel(Sub))
        Tests.push_back({Suite, Name, Sub.str().str()});
    }
    if (Tests.size() == Before)
      return createStringError(inconvertibleErrorCode(),
                               "'" + D +
                                   "' has no model.onnx and no test folders "
                                   "holding one");
  }
  return Tests;
}

/// The tensors input_0.pb, input_1.pb... (or output_K.pb) of a data set.
static Expected<std::vector<Tensor>> readDataFiles(StringRef DataDir,
                                                   StringRef Kind) {
  std::vector<Tensor> Tensors;
  for (unsigned K = 0;; ++K) {
    SmallString<256> P(DataDir);
    sys::path::append(P, Kind + "_" + Twine(K) + ".pb");
    if (!sys::fs::exists(P))
      return Tensors;
    Expected<Tensor> T = readTensorProtoFile(P);
    if (!T)
      return T.takeError();
    Tensors.push_back(std::move(*T));
  }
}

static std::string oneLine(std::string S) {
  std::replace(S.begin(), S.end(), '\n', ' ');
  return StringRef(S).trim().str();
}

/// The ONNX 1.12 test generator stores bf16 tensors as u16 bit patterns
/// (numpy has no bfloat16); reinterpret them where a bf16 is expected.
static Tensor adaptBF16(const Tensor &T, DType Want) {
  if (Want == DType::BF16 && T.dtype() == DType::U16)
    return Tensor::copyOf(DType::BF16, T.dims(), T.rawData());
  return T;
}

namespace {
/// What running the data sets of one test found.
struct DataSetOutcome {
  std::string Failure; ///< empty: every data set matched
  std::string Note;    ///< how the test was run, for --verbose
};
} // namespace

/// Imports the test's model for one data set. Symbolic dims are bound to
/// the data's shapes. When the plain import fails, small integer inputs are
/// bound as constants and the import retried: the node tests feed operands
/// solder requires to be constant (axes, split sizes) as graph inputs.
static Expected<std::unique_ptr<Graph>>
importForData(const TestCase &T, const ModelSummary &Summary,
              std::vector<Tensor> &Inputs, std::string &Note,
              bool ForceBind = false) {
  SmallString<256> ModelPath(T.Dir);
  sys::path::append(ModelPath, "model.onnx");
  ImportOptions Opts;
  bool Matched = Inputs.size() == Summary.Inputs.size();
  for (size_t I = 0; Matched && I < Inputs.size(); ++I) {
    const ValueSummary &V = Summary.Inputs[I];
    // Static dims stay as declared so a data/model mismatch is reported.
    if (V.Rank < 0 || llvm::is_contained(V.StaticDims, -1))
      Opts.InputShapes[V.Name] = std::vector<int64_t>(Inputs[I].dims().begin(),
                                                      Inputs[I].dims().end());
  }
  auto G = importOnnxFile(ModelPath, Opts);
  if ((G && !ForceBind) || !Matched)
    return G;

  std::vector<std::pair<std::string, Tensor>> Bindings;
  std::vector<Tensor> Rest;
  for (size_t I = 0; I < Inputs.size(); ++I) {
    DType D = Inputs[I].dtype();
    // Shape-deciding inputs: small integer tensors (axes, pads, sizes)
    // and scalars (Range bounds); when the backend needs static shapes,
    // short float vectors too (Resize's scales).
    bool ShortFloats = ForceBind && isFloat(D) && Inputs[I].rank() <= 1 &&
                       Inputs[I].numElements() <= 8;
    if (((D == DType::I64 || D == DType::I32) &&
         Inputs[I].numElements() <= 64) ||
        (ForceBind && Inputs[I].rank() == 0) || ShortFloats)
      Bindings.push_back({Summary.Inputs[I].Name, Inputs[I]});
    else
      Rest.push_back(Inputs[I]);
  }
  if (Bindings.empty())
    return G;
  auto Bytes = MemoryBuffer::getFile(ModelPath, /*IsText=*/false,
                                     /*RequiresNullTerminator=*/false);
  if (!Bytes)
    return G;
  Expected<std::string> Bound =
      bindInputsAsConstants((*Bytes)->getBuffer(), ModelPath, Bindings);
  if (!Bound) {
    consumeError(Bound.takeError());
    return G;
  }
  for (const auto &B : Bindings)
    Opts.InputShapes.erase(B.first);
  auto Retry = importOnnxBytes(*Bound, T.Dir, Opts);
  if (!Retry) {
    // The first error is the one that explains the model.
    consumeError(Retry.takeError());
    return G;
  }
  consumeError(G.takeError());
  Note = "inputs bound as constants:";
  for (const auto &B : Bindings)
    Note += " '" + B.first + "'";
  Inputs = std::move(Rest);
  return Retry;
}

/// Runs every data set of one test.
static DataSetOutcome runDataSets(const TestCase &T,
                                  const ModelSummary &Summary, Backend &B) {
  std::vector<std::string> Sets = listFolders(T.Dir, "test_data_set_");
  if (Sets.empty())
    return {"no test_data_set_* folders", ""};
  Tolerance Tol = toleranceFor(T.Name);
  // Reduced-precision runs: stored values carry 11 (fp16) or 8 (bf16)
  // significant bits, so the bound is that of the storage type.
  if (Expected<Precision> P = TestPrecision.precision()) {
    if (*P == Precision::F16 || *P == Precision::BF16) {
      double R = *P == Precision::F16 ? 1e-2 : 3e-2;
      Tol.RTol = std::max(Tol.RTol, R);
      Tol.ATol = std::max(Tol.ATol, R / 10);
    }
  } else {
    consumeError(P.takeError());
  }
  DataSetOutcome Out;
  for (const std::string &Set : Sets) {
    SmallString<256> DataDir(T.Dir);
    sys::path::append(DataDir, Set);
    std::string Where = Sets.size() > 1 ? Set + ": " : "";
    auto Fail = [&](const Twine &Why) {
      Out.Failure = (Where + Why).str();
      return Out;
    };
    Expected<std::vector<Tensor>> Inputs = readDataFiles(DataDir, "input");
    if (!Inputs)
      return Fail(toString(Inputs.takeError()));
    Expected<std::vector<Tensor>> Expected = readDataFiles(DataDir, "output");
    if (!Expected)
      return Fail(toString(Expected.takeError()));

    auto G = importForData(T, Summary, *Inputs, Out.Note);
    if (!G)
      return Fail("import failed: " + toString(G.takeError()));
    ArrayRef<Value *> GraphInputs = (*G)->inputs();
    if (GraphInputs.size() != Inputs->size())
      return Fail("the test data has " + Twine(Inputs->size()) +
                  " inputs, the graph " + Twine(GraphInputs.size()));
    for (size_t I = 0; I < Inputs->size(); ++I)
      (*Inputs)[I] = adaptBF16((*Inputs)[I], GraphInputs[I]->dtype());
    PipelineOptions PO;
    if (Error E = TestFusion.apply(PO))
      return Fail(toString(std::move(E)));
    if (Error E = TestPrecision.apply(PO))
      return Fail(toString(std::move(E)));
    if (Error E = TestLimits.apply(PO))
      return Fail(toString(std::move(E)));
    if (Error E = B.prepare(**G, PO, !TestNoOptimize)) {
      // A backend that needs static shapes (cuda) may take the graph once
      // the small integer inputs that decide shapes (axes, pads, sizes)
      // are bound as constants, as a user compiling the model would.
      std::vector<Tensor> Bound = *Inputs;
      std::string Note;
      auto G2 = importForData(T, Summary, Bound, Note, /*ForceBind=*/true);
      Error Retry =
          G2 ? (Note.empty() ? createStringError(inconvertibleErrorCode(), "")
                             : B.prepare(**G2, PO, !TestNoOptimize))
             : G2.takeError();
      if (Retry) {
        consumeError(std::move(Retry));
        return Fail("pipeline failed: " + toString(std::move(E)));
      }
      consumeError(std::move(E));
      G = std::move(G2);
      *Inputs = std::move(Bound);
      Out.Note = Note;
      GraphInputs = (*G)->inputs();
    }
    auto Actual = B.run(**G, *Inputs);
    if (!Actual)
      return Fail("run failed: " + toString(Actual.takeError()));
    if (Actual->size() != Expected->size())
      return Fail("the graph has " + Twine(Actual->size()) +
                  " outputs, the test data " + Twine(Expected->size()));
    for (size_t I = 0; I < Actual->size(); ++I) {
      Tensor Want = adaptBF16((*Expected)[I], (*Actual)[I].dtype());
      CompareResult R = compareTensors((*Actual)[I], Want, Tol);
      if (!R.Match)
        return Fail("output " + Twine(I) + " '" + (*G)->outputs()[I]->name() +
                    "': " + R.Reason);
    }
  }
  return Out;
}

static TestResult runTest(const TestCase &T) {
  SmallString<256> ModelPath(T.Dir);
  sys::path::append(ModelPath, "model.onnx");
  Expected<ModelSummary> S = summarizeOnnxFile(ModelPath);
  if (!S)
    return {Outcome::Fail, toString(S.takeError())};
  if (!S->UnsupportedOps.empty())
    return {Outcome::Skip,
            "unsupported op(s): " + join(S->UnsupportedOps, ", ")};
  if (!S->UnsupportedTypes.empty())
    return {Outcome::Skip,
            "unsupported type(s): " + join(S->UnsupportedTypes, "; ")};
  // createBackend succeeded once in runTestOnnxCommand; a backend object
  // per test keeps threads independent.
  Expected<std::unique_ptr<Backend>> B = createBackend(TestBackend);
  if (!B)
    return {Outcome::Fail, toString(B.takeError())};
  DataSetOutcome D = runDataSets(T, *S, **B);
  std::string Why = oneLine(D.Failure);
  if (Why.empty())
    return {Outcome::Pass, D.Note};
  if (const IllConditionedTest *I = findIllConditioned(T.Name))
    return {Outcome::Skip, std::string("ill-conditioned: ") + I->Reason +
                               " (failure: " + Why + ")"};
  if (!S->LegacyFeatures.empty())
    return {Outcome::Legacy,
            join(S->LegacyFeatures, "; ") + " (failure: " + Why + ")"};
  return {Outcome::Fail, Why};
}

int runTestOnnxCommand(CommandArgs) {
  if (Expected<std::unique_ptr<Backend>> B = createBackend(TestBackend); !B)
    return reportError(B.takeError());
  std::optional<Regex> Filter;
  if (!TestFilter.empty()) {
    Filter.emplace(TestFilter);
    std::string Err;
    if (!Filter->isValid(Err))
      return reportError("--filter '" + TestFilter + "': " + Err);
  }
  if (TestJobs == 0)
    return reportError("--jobs must be at least 1");
  Expected<std::vector<TestCase>> All = discoverTests(TestDirs);
  if (!All)
    return reportError(All.takeError());
  std::vector<TestCase> Tests;
  for (TestCase &T : *All)
    if (!Filter || Filter->match(T.id()))
      Tests.push_back(std::move(T));

  std::vector<TestResult> Results(Tests.size());
  {
    ThreadPool Pool(hardware_concurrency(TestJobs));
    for (size_t I = 0; I < Tests.size(); ++I)
      Pool.async([&, I] { Results[I] = runTest(Tests[I]); });
    Pool.wait();
  }

  raw_ostream &OS = outs();
  std::vector<std::pair<std::string, SuiteCounts>> Suites;
  SuiteCounts Total;
  for (size_t I = 0; I < Tests.size(); ++I) {
    const TestCase &T = Tests[I];
    const TestResult &R = Results[I];
    if (Suites.empty() || Suites.back().first != T.Suite)
      Suites.push_back({T.Suite, {}});
    SuiteCounts &C = Suites.back().second;
    switch (R.Result) {
    case Outcome::Pass:
      ++C.Passed;
      if (TestVerbose)
        OS << "PASS " << T.id()
           << (R.Reason.empty() ? "" : " (" + R.Reason + ")") << "\n";
      break;
    case Outcome::Fail:
      ++C.Failed;
      OS << "FAIL " << T.id() << ": " << R.Reason << "\n";
      break;
    case Outcome::Skip:
      ++C.Skipped;
      if (TestVerbose)
        OS << "SKIP " << T.id() << ": " << R.Reason << "\n";
      break;
    case Outcome::Legacy:
      ++C.Skipped;
      ++C.Legacy;
      if (TestVerbose)
        OS << "REFUSED (legacy) " << T.id() << ": " << R.Reason << "\n";
      break;
    }
  }
  for (const auto &[Name, C] : Suites) {
    unsigned Ran = C.Passed + C.Failed;
    OS << "suite " << Name << ": " << C.Passed << " passed, " << C.Failed
       << " failed, " << C.Skipped << " skipped (" << C.Legacy
       << " refused (legacy)); pass rate "
       << format("%.1f%%", Ran ? 100.0 * C.Passed / Ran : 100.0) << " ("
       << C.Passed << "/" << Ran << ")\n";
    Total.Passed += C.Passed;
    Total.Failed += C.Failed;
    Total.Skipped += C.Skipped;
    Total.Legacy += C.Legacy;
  }
  OS << "refused (legacy): " << Total.Legacy << " (counted among skipped)\n";
  OS << Total.Passed << " passed, " << Total.Failed << " failed, "
     << Total.Skipped << " skipped\n";
  OS.flush();
  return Total.Failed ? ExitMismatch : ExitSuccess;
}

} // namespace solder
