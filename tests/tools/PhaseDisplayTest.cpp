//===- PhaseDisplayTest.cpp - Phase progress and timings of the CLI -------===//
//
// tools/Verbosity.h: a phase is drawn on the terminal only once it has run
// a second, and erased when it ends; --verbose timings are one line per
// phase; a quiet display prints nothing.
//
//===----------------------------------------------------------------------===//
#include "tools/Verbosity.h"
#include "gtest/gtest.h"
#include <chrono>
#include <thread>

using namespace solder;

namespace {

std::string capture(bool Live, bool Timings,
                    std::chrono::milliseconds Duration) {
  testing::internal::CaptureStderr();
  {
    PhaseDisplay D(Live, Timings);
    PhaseCallback CB = D.callback();
    CB("upload", false);
    std::this_thread::sleep_for(Duration);
    CB("upload", true);
  }
  return testing::internal::GetCapturedStderr();
}

TEST(PhaseDisplayTest, ShortPhasesAreNotDrawn) {
  EXPECT_EQ(
      capture(/*Live=*/true, /*Timings=*/false, std::chrono::milliseconds(50)),
      "");
}

TEST(PhaseDisplayTest, LongPhaseIsDrawnThenErased) {
  std::string Out = capture(true, false, std::chrono::milliseconds(1500));
  EXPECT_NE(Out.find("\rupload... 1."), std::string::npos) << Out;
  // Ends on an erased line: carriage return, blanks, carriage return.
  ASSERT_FALSE(Out.empty());
  EXPECT_EQ(Out.back(), '\r') << Out;
  EXPECT_EQ(Out.find('\n'), std::string::npos) << Out;
}

TEST(PhaseDisplayTest, TimingsArePrintedAndQuietPrintsNothing) {
  std::string Out = capture(false, true, std::chrono::milliseconds(20));
  EXPECT_EQ(Out.rfind("phase upload: 0.0", 0), 0u) << Out;
  EXPECT_EQ(Out.back(), '\n');
  EXPECT_EQ(capture(false, false, std::chrono::milliseconds(20)), "");
}

} // namespace
