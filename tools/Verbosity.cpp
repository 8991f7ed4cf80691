//===- Verbosity.cpp - --quiet, --verbose and phase progress --------------===//
#include "tools/Verbosity.h"
#include "tools/GpuCommands.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace solder {

/// A phase is drawn only once it has run this long: short ones never flash.
static constexpr std::chrono::milliseconds DrawAfter(1000);
static constexpr std::chrono::milliseconds Redraw(200);

PhaseDisplay::PhaseDisplay(bool Live, bool Timings) : Timings(Timings) {
  if (Live)
    Ticker = std::thread([this] { tick(); });
}

PhaseDisplay::~PhaseDisplay() {
  {
    std::lock_guard<std::mutex> Lock(M);
    Stopping = true;
    clearLine();
  }
  Wake.notify_all();
  if (Ticker.joinable())
    Ticker.join();
}

void PhaseDisplay::begin(StringRef Phase) {
  std::lock_guard<std::mutex> Lock(M);
  clearLine();
  Current = Phase.str();
  Start = std::chrono::steady_clock::now();
}

void PhaseDisplay::end(StringRef Phase) {
  std::lock_guard<std::mutex> Lock(M);
  clearLine();
  if (Timings)
    errs() << "phase " << Phase << ": "
           << format("%.3f", std::chrono::duration<double>(
                                 std::chrono::steady_clock::now() - Start)
                                 .count())
           << " s\n";
  Current.clear();
}

PhaseCallback PhaseDisplay::callback() {
  return
      [this](StringRef Phase, bool Done) { Done ? end(Phase) : begin(Phase); };
}

void PhaseDisplay::clearLine() {
  if (!DrawnWidth)
    return;
  errs() << "\r" << std::string(DrawnWidth, ' ') << "\r";
  errs().flush();
  DrawnWidth = 0;
}

void PhaseDisplay::tick() {
  std::unique_lock<std::mutex> Lock(M);
  while (!Stopping) {
    Wake.wait_for(Lock, Redraw);
    // NVRTC draws its own kernel counter.
    if (Stopping || Current.empty() || Current == "kernels")
      continue;
    auto Elapsed = std::chrono::steady_clock::now() - Start;
    if (Elapsed < DrawAfter)
      continue;
    std::string Line;
    raw_string_ostream(Line)
        << Current << "... "
        << format("%.1f", std::chrono::duration<double>(Elapsed).count())
        << " s";
    errs() << "\r" << Line;
    if (Line.size() < DrawnWidth)
      errs() << std::string(DrawnWidth - Line.size(), ' ');
    errs().flush();
    DrawnWidth = std::max(DrawnWidth, Line.size());
  }
}

VerbosityFlags::VerbosityFlags(cl::SubCommand &Sub, cl::OptionCategory &Cat)
    : Quiet("quiet",
            cl::desc("Print nothing but errors and the command's output"),
            cl::sub(Sub), cl::cat(Cat)),
      Verbose("verbose",
              cl::desc("Also print how long each phase took (stderr)"),
              cl::sub(Sub), cl::cat(Cat)) {}

raw_ostream *VerbosityFlags::progressStream() const {
  return !Quiet && sys::Process::StandardErrIsDisplayed() ? &errs() : nullptr;
}

std::unique_ptr<PhaseDisplay> VerbosityFlags::makeDisplay() const {
  return std::make_unique<PhaseDisplay>(
      !Quiet && sys::Process::StandardErrIsDisplayed(), verbose());
}

void VerbosityFlags::apply(ModelLoadOptions &Opts,
                           PhaseDisplay &Display) const {
  Opts.Progress = progressStream();
  Opts.OnPhase = Display.callback();
  if (verbose())
    Opts.OnPassTime = [](StringRef Pass, double Seconds) {
      if (Seconds >= 0.0005) // the rest round to 0.000
        errs() << "  pass " << Pass << ": " << format("%.3f", Seconds)
               << " s\n";
    };
}

} // namespace solder
