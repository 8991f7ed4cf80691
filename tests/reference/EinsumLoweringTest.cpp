//===- EinsumLoweringTest.cpp - Einsum imported as MatMul and friends -----===//
//
// Hand-checked Einsum equations through the lowering of
// frontend/EinsumLowering.cpp and the reference executor: a batched
// matmul, an inner product to a scalar, a row sum, a transpose, an outer
// product, a transposed second operand, "..." and a summed-away letter;
// and the refusals naming the node and equation.
//
//===----------------------------------------------------------------------===//
#include "NodeRunner.h"
#include "tests/reference/ImportAndRun.h"

using namespace solder;
using namespace solder::testing;

namespace {

using IV = std::vector<int64_t>;

/// Fills B with Einsum node 'e' over inputs of the given static dims.
void addEinsum(ModelBuilder &B, const std::string &Eq,
               const std::vector<std::vector<std::string>> &Dims) {
  std::vector<std::string> Ins;
  for (size_t I = 0; I < Dims.size(); ++I) {
    Ins.push_back("x" + std::to_string(I));
    B.input(Ins.back(), Dims[I]);
  }
  setString(B.node("Einsum", Ins, {"y"}, "e"), "equation", Eq);
  B.output("y");
}

Tensor einsum(const std::string &Eq,
              const std::vector<std::vector<std::string>> &Dims,
              const std::vector<Tensor> &Ins) {
  ModelBuilder B(12);
  addEinsum(B, Eq, Dims);
  auto R = importAndRun(B, Ins);
  return R.empty() ? Tensor() : R[0];
}

Tensor f32(llvm::ArrayRef<int64_t> Dims, const std::vector<double> &V) {
  return make(DType::F32, Dims, V);
}

TEST(EinsumLoweringTest, MatmulsAndProducts) {
  Tensor Y =
      einsum("bij, bjk -> bik", {{"1", "2", "2"}, {"1", "2", "2"}},
             {f32({1, 2, 2}, {1, 2, 3, 4}), f32({1, 2, 2}, {5, 6, 7, 8})});
  EXPECT_EQ(dimsOf(Y), (IV{1, 2, 2}));
  expectValues(Y, {19, 22, 43, 50});
  Tensor Dot =
      einsum("i,i", {{"3"}, {"3"}}, {f32({3}, {1, 2, 3}), f32({3}, {4, 5, 6})});
  EXPECT_EQ(dimsOf(Dot), (IV{}));
  expectValues(Dot, {32});
  Tensor Outer = einsum("i,j->ij", {{"2"}, {"3"}},
                        {f32({2}, {1, 2}), f32({3}, {3, 4, 5})});
  expectValues(Outer, {3, 4, 5, 6, 8, 10});
  // B given as [k, j]: A [2, 2] times B transposed.
  Tensor BT = einsum("ij,kj->ik", {{"2", "2"}, {"2", "2"}},
                     {f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {5, 7, 6, 8})});
  expectValues(BT, {19, 22, 43, 50});
}

TEST(EinsumLoweringTest, SumsTransposesAndEllipsis) {
  Tensor X = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expectValues(einsum("ij->i", {{"2", "3"}}, {X}), {6, 15});
  Tensor T = einsum("ij->ji", {{"2", "3"}}, {X});
  EXPECT_EQ(dimsOf(T), (IV{3, 2}));
  expectValues(T, {1, 4, 2, 5, 3, 6});
  // j is summed away in the first operand before the product.
  Tensor S = einsum("ij,k->ik", {{"2", "3"}, {"2"}}, {X, f32({2}, {1, 10})});
  expectValues(S, {6, 60, 15, 150});
  Tensor E =
      einsum("...ij,...jk->...ik", {{"2", "1", "2"}, {"2", "2", "1"}},
             {f32({2, 1, 2}, {1, 2, 3, 4}), f32({2, 2, 1}, {1, 1, 2, 3})});
  EXPECT_EQ(dimsOf(E), (IV{2, 1, 1}));
  expectValues(E, {3, 18});
}

TEST(EinsumLoweringTest, SymbolicDimsWhereNoReshapeIsNeeded) {
  // Attention scores with a symbolic batch: transposes and one MatMul.
  ModelBuilder B(12);
  addEinsum(B, "bhqd,bhkd->bhqk", {{"N", "1", "2", "2"}, {"N", "1", "2", "2"}});
  ASSERT_IMPORTS(G, B);
  EXPECT_FALSE(firstNode(G, OpKind::Reshape));
  auto R = importAndRun(
      B, {f32({1, 1, 2, 2}, {1, 2, 3, 4}), f32({1, 1, 2, 2}, {5, 7, 6, 8})});
  ASSERT_EQ(R.size(), 1u);
  expectValues(R[0], {19, 22, 43, 50});
  // A projection of a [batch, seq, d] activation: B broadcasts.
  ModelBuilder P(12);
  addEinsum(P, "bnd,dk->bnk", {{"N", "S", "2"}, {"2", "1"}});
  auto RP =
      importAndRun(P, {f32({1, 2, 2}, {1, 2, 3, 4}), f32({2, 1}, {1, 10})});
  ASSERT_EQ(RP.size(), 1u);
  expectValues(RP[0], {21, 43});
  ModelBuilder T(12);
  addEinsum(T, "ij->ji", {{"N", "3"}});
  auto RT = importAndRun(T, {f32({2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_EQ(RT.size(), 1u);
  expectValues(RT[0], {1, 4, 2, 5, 3, 6});
}

TEST(EinsumLoweringTest, RefusalsNameTheNodeAndEquation) {
  auto Err = [](const std::string &Eq,
                const std::vector<std::vector<std::string>> &Dims) {
    ModelBuilder B(12);
    addEinsum(B, Eq, Dims);
    return errorText(B.import());
  };
  std::string E = Err("ii->i", {{"3", "3"}});
  EXPECT_NE(E.find("Einsum node 'e'"), std::string::npos) << E;
  EXPECT_NE(E.find("equation 'ii->i'"), std::string::npos) << E;
  EXPECT_NE(E.find("diagonal"), std::string::npos) << E;
  E = Err("i,i,i", {{"3"}, {"3"}, {"3"}});
  EXPECT_NE(E.find("more than two operands"), std::string::npos) << E;
  E = Err("ij,jk", {{"2", "3"}, {"4", "2"}});
  EXPECT_NE(E.find("sizes 3 and 4"), std::string::npos) << E;
  // K = "jk" must be merged by a Reshape, which needs i's size.
  E = Err("ijk,jkl->il", {{"N", "2", "3"}, {"2", "3", "4"}});
  EXPECT_NE(E.find("letter 'i' has a symbolic size"), std::string::npos) << E;
}

} // namespace
