//===- Verbosity.h - --quiet, --verbose and phase progress ------*- C++ -*-===//
//
// How much a command says while it works:
//   default    on a terminal, a phase that has run for a second (import,
//              passes, plan, upload, tuning) shows "<phase>... 2.4 s" on
//              stderr, redrawn and cleared when it ends; NVRTC shows its
//              kernel counter. Nothing when stderr is not a terminal.
//   --quiet    nothing but errors and the command's own output.
//   --verbose  also one "phase <name>: 1.234 s" line per phase on stderr,
//              terminal or not.
// The phases come from the API's PhaseCallback (CompileOptions::OnPhase).
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TOOLS_VERBOSITY_H
#define SOLDER_TOOLS_VERBOSITY_H

#include "solder/Solder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace solder {

struct ModelLoadOptions;

/// Draws the running phase on a terminal and prints phase timings.
class PhaseDisplay {
public:
  /// Live: draw a phase once it has run a second; Timings: print each
  /// phase's time when it ends. Either may be off.
  PhaseDisplay(bool Live, bool Timings);
  ~PhaseDisplay();
  PhaseDisplay(const PhaseDisplay &) = delete;
  PhaseDisplay &operator=(const PhaseDisplay &) = delete;

  void begin(llvm::StringRef Phase);
  void end(llvm::StringRef Phase);
  /// begin/end as the API's callback; valid while this display lives.
  PhaseCallback callback();

private:
  void tick();
  void clearLine();

  bool Timings;
  std::mutex M;
  std::condition_variable Wake;
  std::thread Ticker;
  bool Stopping = false;
  std::string Current;
  std::chrono::steady_clock::time_point Start;
  size_t DrawnWidth = 0;
};

/// --quiet and --verbose of one command; declared next to its SubCommand
/// like FusionFlags.
class VerbosityFlags {
public:
  VerbosityFlags(llvm::cl::SubCommand &Sub, llvm::cl::OptionCategory &Cat);
  bool quiet() const { return Quiet; }
  bool verbose() const { return Verbose && !Quiet; }
  /// Where notes go: stderr, or nowhere with --quiet.
  llvm::raw_ostream &notes() const {
    return Quiet ? llvm::nulls() : llvm::errs();
  }
  /// Progress lines (stderr on a terminal) unless --quiet.
  llvm::raw_ostream *progressStream() const;
  /// Sets Opts.Progress and Opts.OnPhase to report through Display.
  void apply(ModelLoadOptions &Opts, PhaseDisplay &Display) const;
  /// A display matching the flags.
  std::unique_ptr<PhaseDisplay> makeDisplay() const;

private:
  llvm::cl::opt<bool> Quiet, Verbose;
};

} // namespace solder

#endif
