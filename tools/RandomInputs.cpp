//===- RandomInputs.cpp - Seeded random input tensors ---------------------===//
#include "tools/RandomInputs.h"
#include <cassert>
#include <cmath>

namespace solder {

uint64_t RandomGenerator::next() {
  // splitmix64: tiny, fast and well mixed; quality is ample for test inputs.
  uint64_t Z = (State += 0x9e3779b97f4a7c15ULL);
  Z = (Z ^ (Z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  Z = (Z ^ (Z >> 27)) * 0x94d049bb133111ebULL;
  return Z ^ (Z >> 31);
}

float RandomGenerator::uniform01() {
  return float(next() >> 40) * (1.0f / 16777216.0f);
}

float RandomGenerator::normal() {
  // 1 - u keeps the log argument in (0, 1].
  double U1 = 1.0 - double(next() >> 11) * (1.0 / 9007199254740992.0);
  double U2 = double(next() >> 11) * (1.0 / 9007199254740992.0);
  return float(std::sqrt(-2.0 * std::log(U1)) * std::cos(2.0 * M_PI * U2));
}

Tensor makeRandomTensor(DType Elem, llvm::ArrayRef<int64_t> Dims,
                        const RandomOptions &Opts, RandomGenerator &Gen) {
  assert(Opts.IntHigh > Opts.IntLow && "empty integer range");
  Tensor T(Elem, Dims);
  int64_t N = T.numElements();
  uint64_t Span = uint64_t(Opts.IntHigh) - uint64_t(Opts.IntLow);
  for (int64_t I = 0; I < N; ++I) {
    if (isFloat(Elem)) {
      float V = Opts.Floats == RandomOptions::FloatDistribution::Normal
                    ? Gen.normal()
                    : Gen.uniform01() * 2.0f - 1.0f;
      T.setDouble(I, V);
    } else if (Elem == DType::Bool) {
      T.setDouble(I, double(Gen.next() >> 63));
    } else {
      // Modulo bias is irrelevant for test inputs.
      T.setDouble(I, double(Opts.IntLow + int64_t(Gen.next() % Span)));
    }
  }
  return T;
}

} // namespace solder
