//===- ShapeArgsTest.cpp - `--shape` values with dim ranges ---------------===//
//
// parseDimRanges turns `1..32x8..512` into per-dim ranges (a plain size is a
// range of one); malformed or inverted ranges are usage errors.
//
//===----------------------------------------------------------------------===//
#include "tools/CommandUtils.h"
#include <gtest/gtest.h>

using namespace solder;

TEST(ShapeArgsTest, RangesAndSizesPerDim) {
  auto R = parseDimRanges("1..32x8..512");
  ASSERT_TRUE(bool(R)) << llvm::toString(R.takeError());
  EXPECT_EQ(*R, (std::vector<DimRange>{{1, 32}, {8, 512}}));
  R = parseDimRanges("4x3..3x128");
  ASSERT_TRUE(bool(R)) << llvm::toString(R.takeError());
  EXPECT_EQ(*R, (std::vector<DimRange>{{4, 4}, {3, 3}, {128, 128}}));
}

TEST(ShapeArgsTest, MalformedRangesAreRefused) {
  for (const char *Bad : {"5..2", "a..4", "1..", "..4", "1..2..3", "",
                          "1..99999999999999"}) {
    auto R = parseDimRanges(Bad);
    ASSERT_FALSE(bool(R)) << Bad;
    std::string Msg = llvm::toString(R.takeError());
    EXPECT_NE(Msg.find("bad dim ranges"), std::string::npos) << Msg;
  }
}
