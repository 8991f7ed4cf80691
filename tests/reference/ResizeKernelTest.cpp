//===- ResizeKernelTest.cpp - Resize reference kernel ---------------------===//
//
// Hand-checked Resize results: nearest with asymmetric coordinates and
// floor, linear with half_pixel (PyTorch's align_corners=False) and
// align_corners, cubic taps clamped at the edge, tf_crop_and_resize
// extrapolation, keep_aspect_ratio_policy, the axes attribute, integer
// tensors (nearest only) and the errors.
//
//===----------------------------------------------------------------------===//
#include "NodeRunner.h"
#include "ir/OpKind.h"

using namespace solder;
using namespace solder::testing;

namespace {

using IV = std::vector<int64_t>;

NodeRunner resize(const std::string &Mode, const std::string &Coord) {
  NodeRunner R(OpKind::Resize);
  R.attr("mode", Mode).attr("coordinate_transformation_mode", Coord);
  return R;
}

Tensor scales(const std::vector<double> &S) {
  return make(DType::F32, {int64_t(S.size())}, S);
}

TEST(ResizeKernelTest, NearestAsymmetricFloorRepeats) {
  Tensor X = make(DType::F32, {2}, {1, 2});
  Tensor S = scales({2});
  Tensor Y = resize("nearest", "asymmetric")
                 .attr("nearest_mode", std::string("floor"))
                 .runOk({&X, nullptr, &S, nullptr});
  EXPECT_EQ(dimsOf(Y), (IV{4}));
  expectValues(Y, {1, 1, 2, 2});
}

TEST(ResizeKernelTest, LinearHalfPixelAndAlignCorners) {
  Tensor X = make(DType::F32, {2}, {0, 10});
  Tensor Four = Tensor::fromInt64s({4});
  // Sources -0.25, 0.25, 0.75, 1.25; the outer ones clamp to the edge.
  expectValues(
      resize("linear", "half_pixel").runOk({&X, nullptr, nullptr, &Four}),
      {0, 2.5, 7.5, 10});
  Tensor Three = Tensor::fromInt64s({3});
  expectValues(
      resize("linear", "align_corners").runOk({&X, nullptr, nullptr, &Three}),
      {0, 5, 10});
}

TEST(ResizeKernelTest, CubicTapsClampAtTheEdge) {
  // At x = 0.5 the A = -0.75 weights are -0.09375, 0.59375, 0.59375,
  // -0.09375 over sources -1, 0, 1, 2 (-1 clamped to 0): 0.40625. At 1.5
  // all four are inside, and cubic reproduces the line: 1.5; at 2.5 source
  // 4 clamps to 3: 2.59375. (The values of onnx's reference too.)
  Tensor X = make(DType::F32, {4}, {0, 1, 2, 3});
  Tensor S = scales({2});
  Tensor Y = resize("cubic", "asymmetric").runOk({&X, nullptr, &S, nullptr});
  EXPECT_EQ(dimsOf(Y), (IV{8}));
  expectValues(Y, {0, 0.40625, 1, 1.5, 2, 2.59375, 3, 3.09375});
}

TEST(ResizeKernelTest, CropAndResizeExtrapolates) {
  // roi [0.5, 1.5] of [0, 10]: sources 0.5, 1, 1.5; the last is outside.
  Tensor X = make(DType::F32, {2}, {0, 10});
  Tensor Roi = make(DType::F32, {2}, {0.5, 1.5});
  Tensor Three = Tensor::fromInt64s({3});
  Tensor Y = resize("linear", "tf_crop_and_resize")
                 .attr("extrapolation_value", 7.0f)
                 .runOk({&X, &Roi, nullptr, &Three});
  expectValues(Y, {5, 10, 7});
}

TEST(ResizeKernelTest, AspectPolicyAndAxes) {
  Tensor X = make(DType::F32, {2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor Sizes = Tensor::fromInt64s({4, 4});
  Tensor Small =
      resize("nearest", "asymmetric")
          .attr("keep_aspect_ratio_policy", std::string("not_larger"))
          .runOk({&X, nullptr, nullptr, &Sizes});
  EXPECT_EQ(dimsOf(Small), (IV{2, 4})); // min(4/2, 4/4) = 1
  Tensor Big = resize("nearest", "asymmetric")
                   .attr("keep_aspect_ratio_policy", std::string("not_smaller"))
                   .runOk({&X, nullptr, nullptr, &Sizes});
  EXPECT_EQ(dimsOf(Big), (IV{4, 8})); // max(2, 1) = 2 on both axes
  // Only axis 0, doubled: rows repeat.
  Tensor S = scales({2});
  Tensor Rows = resize("nearest", "asymmetric")
                    .attr("axes", std::vector<int64_t>{0})
                    .runOk({&X, nullptr, &S, nullptr});
  EXPECT_EQ(dimsOf(Rows), (IV{4, 4}));
  expectValues(Rows, {0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7});
}

TEST(ResizeKernelTest, IntegersOnlyNearestAndErrors) {
  Tensor X(DType::I64, {2});
  X.mutableData<int64_t>()[0] = INT64_MAX;
  X.mutableData<int64_t>()[1] = -3;
  Tensor S = scales({1.5});
  // Sources (y + 0.5) / 1.5 - 0.5 = -1/6, 0.5, 7/6: round_prefer_floor
  // picks 0, 0, 1; the int64 copies are exact.
  Tensor Y = resize("nearest", "half_pixel").runOk({&X, nullptr, &S, nullptr});
  EXPECT_EQ(toInts(Y), (IV{INT64_MAX, INT64_MAX, -3}));
  resize("linear", "half_pixel")
      .expectError({&X, nullptr, &S, nullptr}, "only mode 'nearest'");
  Tensor F = make(DType::F32, {2}, {0, 1});
  Tensor Sizes = Tensor::fromInt64s({4});
  resize("linear", "half_pixel")
      .expectError({&F, nullptr, &S, &Sizes}, "exactly one of scales");
  resize("linear", "half_pixel")
      .attr("antialias", int64_t(1))
      .expectError({&F, nullptr, &S, nullptr}, "antialias");
  resize("bicubic", "half_pixel")
      .expectError({&F, nullptr, &S, nullptr}, "mode 'bicubic'");
  Tensor Zero = scales({0});
  resize("linear", "half_pixel")
      .expectError({&F, nullptr, &Zero, nullptr}, "scales must be positive");
}

} // namespace
