//===- RandomInputs.h - Seeded random input tensors -------------*- C++ -*-===//
//
// Generates reproducible random inputs for `solder run --random-inputs`:
// floats uniform in [-1, 1) or standard normal, integers uniform in a
// half-open range (default [0, 10), small enough to be valid indices for
// most embedding tables and gathers), bools fair coin flips. The generator
// is a fixed algorithm (splitmix64), not std::*_distribution, so the same
// seed gives the same tensors with every standard library.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TOOLS_RANDOMINPUTS_H
#define SOLDER_TOOLS_RANDOMINPUTS_H

#include "ir/Tensor.h"
#include <cstdint>

namespace solder {

struct RandomOptions {
  enum class FloatDistribution { Uniform, Normal };
  FloatDistribution Floats = FloatDistribution::Uniform;
  /// Integers are drawn from [IntLow, IntHigh).
  int64_t IntLow = 0;
  int64_t IntHigh = 10;
};

class RandomGenerator {
public:
  explicit RandomGenerator(uint64_t Seed) : State(Seed) {}
  uint64_t next();
  /// Uniform in [0, 1) with 24 random bits.
  float uniform01();
  /// Standard normal (Box-Muller).
  float normal();

private:
  uint64_t State;
};

/// A tensor of the given dtype and shape filled from Gen.
Tensor makeRandomTensor(DType Elem, llvm::ArrayRef<int64_t> Dims,
                        const RandomOptions &Opts, RandomGenerator &Gen);

} // namespace solder

#endif
