//===- ArrayOpsTest.cpp - Shapes and error lines of lib/Graph/ArrayOps ---===//
//
// The result shapes and dtypes the array ops, einsum and the *_nd ops build
// (their values: CompiledOpsTest, gradients: GradientCheckTest, against TF:
// test/e2e/op_cases/shapes.py), and every mistake a caller can make, each
// one line naming the op, its scope and what is wrong.
//
//===----------------------------------------------------------------------===//

#include "lib/Graph/ArrayOps.h"
#include "lib/Graph/Ops.h"
#include "test/reference/ReferenceEvaluator.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

namespace estc {
namespace {

/// The message `f` throws ("" when it throws none).
template <typename F> std::string errorOf(F &&f) {
  try {
    f();
  } catch (const GraphError &e) {
    return e.what();
  }
  return "";
}

struct ArrayOpsTest : ::testing::Test {
  Graph g;
  Scope mode = g.mode_scope(ModeKeys::PREDICT);
  Tensor x = g.placeholder("x", DType::Float32, {2, 3, 4});
  Tensor batch = g.placeholder("batch", DType::Float32, {-1, 3});
  Tensor ids = g.placeholder("ids", DType::Int64, {5, 2});
};

TEST_F(ArrayOpsTest, Shapes) {
  EXPECT_EQ(tile(x, {2, 1, 3}).shape(), (Dims{4, 3, 12}));
  EXPECT_EQ(tile(batch, {2, 2}).shape(), (Dims{-1, 6}));
  EXPECT_EQ(stack({x, x, x}, 1).shape(), (Dims{2, 3, 3, 4}));
  EXPECT_EQ(stack({batch, batch}, -1).shape(), (Dims{-1, 3, 2}));
  Tensor sq = g.placeholder("sq", DType::Float32, {-1, 4, 4, 3});
  EXPECT_EQ(einsum("biij->bij", {sq}).shape(), (Dims{-1, 4, 3}));
  EXPECT_EQ(einsum("bii...->b...", {sq}).shape(), (Dims{-1, 3}));
  EXPECT_EQ(
      einsum("...iij,j->...i", {sq, g.placeholder("v", DType::Float32, {3})})
          .shape(),
      (Dims{-1, 4}));
  std::vector<Tensor> parts = unstack(x, 1);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2].shape(), (Dims{2, 4}));
  std::vector<Tensor> halves = split(x, 2, -1);
  ASSERT_EQ(halves.size(), 2u);
  EXPECT_EQ(halves[1].shape(), (Dims{2, 3, 2}));
  std::vector<Tensor> sized = split(x, Dims{1, -1}, 2);
  EXPECT_EQ(sized[1].shape(), (Dims{2, 3, 3}));
  EXPECT_EQ(range(g, 1, 10, 3).shape(), (Dims{3}));
  EXPECT_EQ(range(g, 5, 0, -2).shape(), (Dims{3}));
  EXPECT_EQ(range(g, 0, 1, 0.3, DType::Float32).shape(), (Dims{4}));
  EXPECT_EQ(range(g, 4).dtype(), DType::Int32);
  EXPECT_EQ(shape_of(batch).shape(), (Dims{2}));
  EXPECT_EQ(shape_of(batch, DType::Int64).dtype(), DType::Int64);
  EXPECT_EQ(size(x).op(), "constant");
  EXPECT_EQ(size(batch).op(), "reduce_prod");
  EXPECT_EQ(reverse(batch, {0, -1}).shape(), (Dims{-1, 3}));
  // x[1, ::-1, tf.newaxis, 1:3]
  EXPECT_EQ(strided_slice(x, {1, 0, 0, 1}, {0, 0, 0, 3}, {1, -1, 1, 1}, 0b0010,
                          0b0010, 0, 0b0100, 0b0001)
                .shape(),
            (Dims{3, 1, 2}));
  // x[..., ::2] and batch[:, -1]
  EXPECT_EQ(strided_slice(x, {0, 0}, {0, 0}, {1, 2}, 0b10, 0b10, 0b01).shape(),
            (Dims{2, 3, 2}));
  EXPECT_EQ(
      strided_slice(batch, {0, -1}, {0, 0}, {1, 1}, 0b01, 0b01, 0, 0, 0b10)
          .shape(),
      (Dims{-1}));
  // x[1:, ::-1, tf.newaxis, ..., 0] and batch[..., -1]
  EXPECT_EQ(
      getitem(x, {Slice{.start = 1}, Slice{.step = -1}, newaxis, ellipsis, 0})
          .shape(),
      (Dims{1, 3, 1}));
  EXPECT_EQ(getitem(batch, {ellipsis, -1}).shape(), (Dims{-1}));
  EXPECT_EQ(gather_nd(x, ids).shape(), (Dims{5, 4}));
  EXPECT_EQ(
      gather_nd(x, g.constant({1, 0, 2, 1}, {2, 2}, DType::Int64), 1).shape(),
      (Dims{2}));
  EXPECT_EQ(scatter_nd(ids, g.constant({1.0}, {5, 4}), {2, 3, 4}).shape(),
            (Dims{2, 3, 4}));
  EXPECT_EQ(tensor_scatter_nd_max(x, ids, g.constant({1.0}, {5, 4})).shape(),
            (Dims{2, 3, 4}));
  Tensor a = g.placeholder("a", DType::Float32, {-1, 5, 2, 8});
  Tensor b = g.placeholder("b", DType::Float32, {-1, 7, 2, 8});
  EXPECT_EQ(einsum("bqhd,bkhd->bhqk", {a, b}).shape(), (Dims{-1, 2, 5, 7}));
  EXPECT_EQ(einsum("...ij,jk", {x, g.constant({1.0}, {4, 6})}).shape(),
            (Dims{2, 3, 6}));
  EXPECT_EQ(einsum("ijk->", {x}).shape(), (Dims{}));
  EXPECT_EQ(einsum("ij,jk,kl->il",
                   {g.constant({1.0}, {2, 3}), g.constant({1.0}, {3, 4}),
                    g.constant({1.0}, {4, 5})})
                .shape(),
            (Dims{2, 5}));
  EXPECT_EQ(linalg::matmul(g.constant({1.0}, {2, 1, 4, 5}),
                           g.constant({1.0}, {3, 5, 6}))
                .shape(),
            (Dims{2, 3, 4, 6}));
}

/// einsum where a reshape would need two run-time sizes (the batch b and
/// s, or b and t): one matmul whose extra free indices are broadcast batch
/// dims (one contracted index), else a broadcast multiply + reduce_sum (two
/// contracted indices); both against the same equations over static
/// shapes (reshapes and one matmul), in the reference evaluator.
TEST_F(ArrayOpsTest, EinsumWithoutReshape) {
  struct Case {
    const char *equation;
    Dims a, b, aFed, bFed;
    const char *op;
  };
  const Case cases[] = {
      {"bstc,bcd->bstd",
       {-1, -1, 2, 4},
       {-1, 4, 3},
       {2, 5, 2, 4},
       {2, 4, 3},
       "matmul"},
      {"abc,cde->abde",
       {-1, -1, 4},
       {4, 2, 3},
       {2, 5, 4},
       {4, 2, 3},
       "transpose"},
      {"btc,bd->btcd", {-1, -1, 4}, {-1, 3}, {2, 5, 4}, {2, 3}, "matmul"},
      {"bsxy,bxyd->bsd",
       {-1, -1, 2, 3},
       {-1, 2, 3, 4},
       {2, 5, 2, 3},
       {2, 2, 3, 4},
       "reduce_sum"},
  };
  std::mt19937 rng(5);
  auto random = [&](const Dims &shape) {
    reference::Value v;
    v.shape = shape;
    for (int64_t i = 0; i < shape::numElements(shape); ++i)
      v.data.push_back(std::uniform_real_distribution<double>(-1, 1)(rng));
    return v;
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.equation);
    Graph graph;
    auto m = graph.mode_scope(ModeKeys::PREDICT);
    Tensor a = graph.placeholder("a", DType::Float32, c.a);
    Tensor b = graph.placeholder("b", DType::Float32, c.b);
    Tensor sa = graph.placeholder("sa", DType::Float32, c.aFed);
    Tensor sb = graph.placeholder("sb", DType::Float32, c.bFed);
    Tensor dynamic = einsum(c.equation, {a, b});
    Tensor fixed = einsum(c.equation, {sa, sb});
    EXPECT_EQ(dynamic.op(), c.op);
    reference::Evaluator evaluator(graph.graph_def());
    reference::Value av = random(c.aFed), bv = random(c.bFed);
    std::vector<reference::Value> out = evaluator.evaluate(
        {dynamic.name(), fixed.name()},
        {{a.name(), av}, {b.name(), bv}, {sa.name(), av}, {sb.name(), bv}});
    EXPECT_EQ(out[0].shape, out[1].shape);
    ASSERT_EQ(out[0].data.size(), out[1].data.size());
    for (size_t i = 0; i < out[0].data.size(); ++i)
      EXPECT_NEAR(out[0].data[i], out[1].data[i], 1e-5) << i;
  }
}

TEST_F(ArrayOpsTest, ErrorLines) {
  struct Case {
    std::function<void()> build;
    const char *message;
  };
  Tensor ints = g.placeholder("ints", DType::Int32, {3});
  Tensor m = g.placeholder("m", DType::Float32, {2, 3});
  Tensor n = g.placeholder("n", DType::Float32, {4, 5});
  const Case cases[] = {
      {[&] { tile(x, {2, 2}); },
       "tile 'predict/Tile': input 'predict/x' [2,3,4]: multiples has 2 "
       "entries for a rank-3 "
       "input"},
      {[&] { tile(x, {1, 0, 1}); }, "tile 'predict/Tile_1': input 'predict/x' "
                                    "[2,3,4]: multiples[1] is 0: must be >= 1 "
                                    "(empty tensors are not supported)"},
      {[&] { stack({x, m}); },
       "stack 'predict/stack': inputs 'predict/x' [2,3,4] and 'predict/m' "
       "[2,3]: values 0 and 1 have "
       "different shapes [2,3,4] and [2,3]"},
      {[&] { stack({m, m}, 3); },
       "stack 'predict/stack_1': inputs 'predict/m' [2,3] and 'predict/m' "
       "[2,3]: axis 3 is out of "
       "range for rank 3"},
      {[&] { unstack(batch, 0); },
       "unstack 'predict/unstack': input 'predict/batch' [?,3]: dimension 0 is "
       "known only at "
       "run time: unstack needs its size"},
      {[&] { split(x, 3, 2); }, "split 'predict/split': input 'predict/x' "
                                "[2,3,4]: dimension 2 of size 4 does not "
                                "split into 3 equal parts"},
      {[&] { split(x, Dims{1, 2}, 2); },
       "split 'predict/split_1': input 'predict/x' [2,3,4]: size_splits [1,2] "
       "add up to 3, "
       "not to dimension 2 of size 4"},
      {[&] { split(x, Dims{-1, -1}, 2); },
       "split 'predict/split_2': input 'predict/x' [2,3,4]: size_splits[1] is "
       "-1: sizes must "
       "be >= 1 (one may be -1: the rest; empty tensors are not supported)"},
      {[&] { split(x, Dims{4, -1}, 2); },
       "split 'predict/split_3': input 'predict/x' [2,3,4]: size_splits [4,-1] "
       "leave nothing "
       "for the -1 of dimension 2 of size 4"},
      {[&] { split(x, 2, 3); }, "split 'predict/split_4': input 'predict/x' "
                                "[2,3,4]: axis 3 is out of range for rank "
                                "3"},
      {[&] { range(g, 0, 5, 0); }, "range(0, 5, 0): delta must not be 0"},
      {[&] { range(g, 5, 0, 1); },
       "range(5, 0, 1): requires start <= limit when delta is positive"},
      {[&] { range(g, 0, 2.5, 1); },
       "range(0, 2.5, 1): 2.5 is not an integer but dtype is i32"},
      {[&] { shape_of(x, DType::Float32); },
       "shape 'predict/Shape': input 'predict/x' [2,3,4]: out_type must be i32 "
       "or i64, got "
       "f32"},
      {[&] { reverse(x, {0, 3}); },
       "reverse 'predict/ReverseV2': input 'predict/x' [2,3,4]: axis 3 is out "
       "of range for "
       "rank 3"},
      {[&] { reverse(x, {1, -2}); },
       "reverse 'predict/ReverseV2': input 'predict/x' [2,3,4]: axis -2 is "
       "repeated"},
      {[&] { strided_slice(x, {0, 0}, {1}, {1, 1}); },
       "strided_slice 'predict/StridedSlice': input 'predict/x' [2,3,4]: "
       "begin, end and "
       "strides must have one length, got 2, 1 and 2"},
      {[&] { strided_slice(x, {0, 0}, {1, 1}, {1, 1}, 0, 0, 0b11); },
       "strided_slice 'predict/StridedSlice_1': input 'predict/x' [2,3,4]: "
       "ellipsis_mask 3 "
       "has more than one bit set: multiple ellipses in slice spec are not "
       "allowed"},
      {[&] { strided_slice(x, {0}, {1}, {0}); },
       "strided_slice 'predict/StridedSlice_2': input 'predict/x' [2,3,4]: "
       "stride of "
       "dimension 0 is 0"},
      {[&] { strided_slice(x, {5}, {0}, {1}, 0, 0, 0, 0, 1); },
       "strided_slice 'predict/StridedSlice_3': input 'predict/x' [2,3,4]: "
       "index 5 is out of "
       "bounds for dimension 0 of size 2"},
      {[&] { strided_slice(x, {0, 0, 0, 0}, {1, 1, 1, 1}); },
       "strided_slice 'predict/StridedSlice_4': input 'predict/x' [2,3,4]: "
       "slice entry 3 is "
       "past the input's 3 dimensions"},
      {[&] { strided_slice(x, {1}, {1}); },
       "strided_slice 'predict/StridedSlice_5': input 'predict/x' [2,3,4]: the "
       "slice of "
       "dimension 0 is empty (empty tensors are not supported)"},
      {[&] { strided_slice(batch, {-1}, {0}, {1}, 0, 0, 0, 0, 1); },
       "strided_slice 'predict/StridedSlice_6': input 'predict/batch' [?,3]: "
       "dimension 0 is "
       "known only at run time: index -1 from its end needs its size"},
      {[&] { strided_slice(batch, {0}, {2}); },
       "strided_slice 'predict/StridedSlice_7': input 'predict/batch' [?,3]: "
       "dimension 0 is "
       "known only at run time: it takes a full range (stride 1 or -1), a "
       "stride-1 range from begin >= 0 to the end, or an index >= 0"},
      {[&] { gather_nd(x, m); },
       "gather_nd 'predict/GatherNd': inputs 'predict/x' [2,3,4] and "
       "'predict/m' [2,3]: indices must "
       "be an i32 or i64 tensor, got f32"},
      {[&] { gather_nd(x, g.constant({0.0}, {1, 4}, DType::Int64)); },
       "gather_nd 'predict/GatherNd_1': inputs 'predict/x' [2,3,4] and "
       "'predict/Const' [1,4]: indices "
       "index 4 dimensions, but params has 3"},
      {[&] { gather_nd(x, ids, 2); },
       "gather_nd 'predict/GatherNd_2': inputs 'predict/x' [2,3,4] and "
       "'predict/ids' [5,2]: "
       "batch_dims 2 must be in [0, rank(indices) - 1] and at most "
       "rank(params)"},
      {[&] { gather_nd(x, g.constant({0.0}, {3, 1}, DType::Int64), 1); },
       "gather_nd 'predict/GatherNd_3': inputs 'predict/x' [2,3,4] and "
       "'predict/Const_1' [3,1]: "
       "batch dimension 0 is 2 in params and 3 in indices"},
      {[&] { scatter_nd(ids, m, {2, 3, 4}); },
       "scatter_nd 'predict/ScatterNd': inputs 'predict/ids' [5,2] and "
       "'predict/m' [2,3]: updates "
       "must have shape indices[:-1] + shape[2:] = [5,4], got [2,3]"},
      {[&] { scatter_nd(ids, m, {2, -1}); },
       "scatter_nd 'predict/ScatterNd_1': inputs 'predict/ids' [5,2] and "
       "'predict/m' [2,3]: shape "
       "[2,?] must be static with every dimension >= 1"},
      {[&] { tensor_scatter_nd_update(x, ids, ints); },
       "tensor_scatter_nd_update 'predict/TensorScatterUpdate': inputs "
       "'predict/x' [2,3,4], "
       "'predict/ids' [5,2] and 'predict/ints' [3]: updates must have the "
       "dtype of the "
       "tensor, f32, got i32"},
      {[&] { einsum("ij,jk->ik", {m, n}); },
       "einsum 'predict/Einsum': inputs 'predict/m' [2,3] and 'predict/n' "
       "[4,5]: equation "
       "'ij,jk->ik': index 'j' is 3 in operand 0 and 4 in operand 1"},
      {[&] { einsum("ij,jk->ik", {m}); },
       "einsum 'predict/Einsum_1': input 'predict/m' [2,3]: equation "
       "'ij,jk->ik': has 2 "
       "operand terms for 1 inputs"},
      {[&] { einsum("ijk->ik", {m}); },
       "einsum 'predict/Einsum_2': input 'predict/m' [2,3]: equation "
       "'ijk->ik': operand 0 has "
       "rank 2 but its term names 3 dimensions"},
      {[&] { einsum("ii->i", {m}); },
       "einsum 'predict/Einsum_3': input 'predict/m' [2,3]: equation 'ii->i': "
       "index 'i' repeated in operand 0 has sizes 2 and 3"},
      {[&] { einsum("ij->ik", {m}); },
       "einsum 'predict/Einsum_4': input 'predict/m' [2,3]: equation 'ij->ik': "
       "output index "
       "'k' appears in no operand"},
      {[&] { einsum("i2->i", {m}); },
       "einsum 'predict/Einsum_5': input 'predict/m' [2,3]: equation 'i2->i': "
       "invalid "
       "character '2' in operand 0's term"},
      {[&] { einsum("i.j->i", {m}); },
       "einsum 'predict/Einsum_6': input 'predict/m' [2,3]: equation 'i.j->i': "
       "a '.' in "
       "operand 0's term that is not part of '...'"},
      {[&] { einsum("ij->i->j", {m}); },
       "einsum 'predict/Einsum_7': input 'predict/m' [2,3]: equation "
       "'ij->i->j': more than "
       "one '->'"},
      {[&] { einsum("...j->j", {x}); },
       "einsum 'predict/Einsum_8': input 'predict/x' [2,3,4]: equation "
       "'...j->j': the "
       "operands have '...' dimensions but the output does not"},
      {[&] { einsum("ij,jk", {m, ints}); },
       "einsum 'predict/Einsum_9': inputs 'predict/m' [2,3] and 'predict/ints' "
       "[3]: equation "
       "'ij,jk': operands have different element types f32 and i32"},
      {[&] { einsum("ii->i", {batch}); },
       "einsum 'predict/Einsum_10': input 'predict/batch' [?,3]: equation "
       "'ii->i': index 'i' repeated in operand 0 needs a known size, got "
       "[?,3]"},
  };
  for (const Case &c : cases)
    EXPECT_EQ(errorOf(c.build), c.message);
}

} // namespace
} // namespace estc
