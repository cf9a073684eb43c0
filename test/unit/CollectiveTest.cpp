//===- CollectiveTest.cpp - What compiled code calls, over a replica group
//
// The C entry points of runtime/Collective.cpp (the mean all-reduce, the
// row gathers, the count, the recorded error) over replicas that are
// threads of one process (distribute::make_local_group, installed per
// thread with rt::setThreadCollective), and the local engine itself.
//
//===----------------------------------------------------------------------===//

#include "runtime/Collective.h"
#include "runtime/distribute/Distribute.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

using namespace estc::rt;

namespace {

/// Runs fn(rank) on `size` threads, each with its replica installed.
void onReplicas(int size, const std::function<void(int)> &fn,
                double timeoutSecs = 30) {
  auto group = distribute::make_local_group(size, timeoutSecs);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      setThreadCollective(group[static_cast<size_t>(r)].get());
      fn(r);
      setThreadCollective(nullptr);
    });
  for (std::thread &t : threads)
    t.join();
}

template <typename T> MemRef<T, 1> view(std::vector<T> &v, int64_t stride = 1) {
  MemRef<T, 1> m{};
  m.allocated = m.aligned = v.data();
  m.offset = 0;
  m.sizes[0] = static_cast<int64_t>(v.size()) / stride;
  m.strides[0] = stride;
  return m;
}

/// A collective whose every call fails.
class Broken : public Collective {
public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  const char *engine() const override { return "broken"; }
  void allReduceSum(float *, size_t) override { fail(); }
  void allReduceSum(double *, size_t) override { fail(); }
  void allReduceSum(int64_t *, size_t) override { fail(); }
  void allGatherV(const void *, void *, const size_t *) override { fail(); }
  void broadcast(void *, size_t, int) override { fail(); }
  void barrier() override { fail(); }
  int calls = 0;

private:
  void fail() {
    ++calls;
    throw CollectiveError("lost task worker:0 (127.0.0.1:1) during all_reduce");
  }
};

} // namespace

TEST(Collective, NoGroupIsOneReplica) {
  std::vector<float> v = {1, 2, 3};
  MemRef<float, 1> m = view(v);
  _mlir_ciface_estc_all_reduce_mean_f32(&m);
  EXPECT_EQ(v, (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(estc_collective_size(), 1);
  EXPECT_EQ(estc_collective_error(), nullptr);
}

TEST(Collective, MeanAllReduceIsTheSameBitsOnEveryReplica) {
  for (int size : {2, 3}) {
    std::vector<std::vector<float>> out(static_cast<size_t>(size));
    onReplicas(size, [&](int r) {
      std::vector<float> v(1001);
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = 0.1f * static_cast<float>(r + 1) + 1e-3f * static_cast<float>(i);
      MemRef<float, 1> m = view(v);
      EXPECT_EQ(estc_collective_size(), size);
      _mlir_ciface_estc_all_reduce_mean_f32(&m);
      out[static_cast<size_t>(r)] = v;
    });
    for (int r = 1; r < size; ++r)
      EXPECT_EQ(out[static_cast<size_t>(r)], out[0]) << "replica " << r;
    float sum = 0;
    for (int r = 0; r < size; ++r)
      sum += 0.1f * static_cast<float>(r + 1);
    EXPECT_FLOAT_EQ(out[0][0], sum / static_cast<float>(size));
  }
}

TEST(Collective, StridedViewsAndDoubles) {
  std::vector<std::vector<double>> out(2);
  onReplicas(2, [&](int r) {
    // Every other element is the view; the rest must stay as it was.
    std::vector<double> v = {1.0 + r, -7, 3.0 * r, -7};
    MemRef<double, 1> m = view(v, 2);
    _mlir_ciface_estc_all_reduce_mean_f64(&m);
    out[static_cast<size_t>(r)] = v;
  });
  EXPECT_EQ(out[0], (std::vector<double>{1.5, -7, 1.5, -7}));
  EXPECT_EQ(out[1], out[0]);
}

TEST(Collective, GatherRowsOfEveryReplicaInRankOrder) {
  std::vector<std::vector<int64_t>> ids(3);
  std::vector<std::vector<float>> rows(3);
  onReplicas(3, [&](int r) {
    // Replica r has r + 1 rows of width 2.
    int64_t n = r + 1;
    std::vector<int64_t> in(static_cast<size_t>(n), 10 * r), out(6);
    MemRef<int64_t, 1> a = view(in), b = view(out);
    _mlir_ciface_estc_all_gather_i64(&a, &b);
    std::vector<float> vin(static_cast<size_t>(2 * n), float(r + 1)), vout(12);
    MemRef<float, 2> c{}, d{};
    c.allocated = c.aligned = vin.data();
    c.sizes[0] = n;
    c.sizes[1] = 2;
    c.strides[0] = 2;
    c.strides[1] = 1;
    d.allocated = d.aligned = vout.data();
    d.sizes[0] = 6;
    d.sizes[1] = 2;
    d.strides[0] = 2;
    d.strides[1] = 1;
    _mlir_ciface_estc_all_gather_f32(&c, &d, /*mean=*/1);
    ids[static_cast<size_t>(r)] = out;
    rows[static_cast<size_t>(r)] = vout;
  });
  EXPECT_EQ(ids[0], (std::vector<int64_t>{0, 10, 10, 20, 20, 20}));
  std::vector<float> want = {
      1.f / 3, 1.f / 3, 2.f / 3, 2.f / 3, 2.f / 3, 2.f / 3, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(rows[0], want);
  EXPECT_EQ(ids[2], ids[0]);
  EXPECT_EQ(rows[1], rows[0]);
}

/// A view of `rows` x `width` floats in `v`.
MemRef<float, 2> rowsView(std::vector<float> &v, int64_t rows, int64_t width) {
  MemRef<float, 2> m{};
  m.allocated = m.aligned = v.data();
  m.sizes[0] = rows;
  m.sizes[1] = width;
  m.strides[0] = width;
  m.strides[1] = 1;
  return m;
}

TEST(Collective, GatherPadsTheRowsPastTheTotal) {
  std::vector<std::vector<int64_t>> ids(2);
  std::vector<std::vector<float>> rows(2);
  onReplicas(2, [&](int r) {
    // Replicas of 1 and 2 rows, each with room for 6.
    std::vector<int64_t> in(static_cast<size_t>(r + 1), 7 + r), out(6, -1);
    MemRef<int64_t, 1> a = view(in), b = view(out);
    _mlir_ciface_estc_all_gather_i64(&a, &b);
    std::vector<float> vin(static_cast<size_t>(r + 1), 2.f), vout(6, -1.f);
    MemRef<float, 2> c = rowsView(vin, r + 1, 1), d = rowsView(vout, 6, 1);
    _mlir_ciface_estc_all_gather_f32(&c, &d, /*mean=*/0);
    EXPECT_EQ(estc_collective_error(), nullptr);
    ids[static_cast<size_t>(r)] = out;
    rows[static_cast<size_t>(r)] = vout;
  });
  // Past the 3 gathered rows: the first index again, and zero rows.
  EXPECT_EQ(ids[0], (std::vector<int64_t>{7, 8, 8, 7, 7, 7}));
  EXPECT_EQ(rows[0], (std::vector<float>{2, 2, 2, 0, 0, 0}));
  EXPECT_EQ(ids[1], ids[0]);
  EXPECT_EQ(rows[1], rows[0]);
}

TEST(Collective, AGatherThatDoesNotFitOneReplicaFailsOnEvery) {
  std::vector<std::string> errors(2);
  std::vector<std::vector<int64_t>> outs(2);
  // A short timeout: a replica left waiting would fail the test quickly
  // with another message.
  onReplicas(
      2,
      [&](int r) {
        // Replica 0 has 1 row (room for 2), replica 1 has 3: 4 in all.
        int64_t n = r == 0 ? 1 : 3;
        std::vector<int64_t> in(static_cast<size_t>(n), 5), out(2 * n, -1);
        MemRef<int64_t, 1> a = view(in), b = view(out);
        _mlir_ciface_estc_all_gather_i64(&a, &b);
        const char *e = estc_collective_error();
        errors[static_cast<size_t>(r)] = e ? e : "(none)";
        outs[static_cast<size_t>(r)] = out;
      },
      5);
  std::string want =
      "all_gather: the replicas' sparse gradients have 4 rows in all, more "
      "than the 2 (replicas x its own 1) replica 0's step holds: the "
      "replicas' sparse inputs differ in size";
  EXPECT_EQ(errors[0], want);
  EXPECT_EQ(errors[1], want);
  // The step's results are discarded, but the buffers are defined: the
  // replica's own rows first.
  EXPECT_EQ(outs[0], (std::vector<int64_t>{5, 0}));
}

TEST(Collective, ALocalGroupTimesOutInsteadOfHanging) {
  auto group = distribute::make_local_group(2, 0.2);
  std::string want = "local: 1 of 2 replicas did not reach barrier within "
                     "0.2 s (replica 0 waited)";
  try {
    group[0]->barrier(); // replica 1 never comes
    FAIL() << "no error";
  } catch (const CollectiveError &e) {
    EXPECT_EQ(std::string(e.what()), want);
  }
  // The group stays broken, for every replica.
  float x = 1;
  try {
    group[1]->allReduceSum(&x, 1);
    FAIL() << "no error";
  } catch (const CollectiveError &e) {
    EXPECT_EQ(std::string(e.what()), want);
  }
}

TEST(Collective, ALocalGroupFailsAsOneOnMismatchedSizes) {
  auto group = distribute::make_local_group(2, 5);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      std::vector<float> v(static_cast<size_t>(3 - r), 1.f);
      try {
        group[static_cast<size_t>(r)]->allReduceSum(v.data(), v.size());
      } catch (const CollectiveError &e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(errors[0].rfind("local: replica ", 0), 0u) << errors[0];
  EXPECT_NE(errors[0].find(" elements, replica "), std::string::npos);
  EXPECT_EQ(errors[1], errors[0]);
}

TEST(Collective, AFailureIsRecordedOnceAndLaterCallsDoNothing) {
  Broken broken;
  setThreadCollective(&broken);
  std::vector<float> v = {1, 2};
  MemRef<float, 1> m = view(v);
  _mlir_ciface_estc_all_reduce_mean_f32(&m);
  ASSERT_NE(estc_collective_error(), nullptr);
  EXPECT_STREQ(estc_collective_error(),
               "lost task worker:0 (127.0.0.1:1) during all_reduce");
  EXPECT_EQ(v, (std::vector<float>{1, 2}));
  // The group is broken: no more calls reach it.
  _mlir_ciface_estc_all_reduce_mean_f32(&m);
  EXPECT_EQ(broken.calls, 1);
  // Installing a group clears the error.
  setThreadCollective(&broken);
  EXPECT_EQ(estc_collective_error(), nullptr);
  setThreadCollective(nullptr);
}

TEST(Collective, StatsCountCallsAndBytes) {
  onReplicas(2, [&](int) {
    resetCollectiveStats();
    std::vector<float> v(100, 1.f);
    MemRef<float, 1> m = view(v);
    _mlir_ciface_estc_all_reduce_mean_f32(&m);
    _mlir_ciface_estc_all_reduce_mean_f32(&m);
    CollectiveStats s = collectiveStats();
    EXPECT_EQ(s.calls, 2);
    EXPECT_EQ(s.bytes, 800);
    EXPECT_GE(s.seconds, 0.0);
  });
}

TEST(Collective, LocalGroupBroadcastAndBarrier) {
  std::vector<std::vector<int>> out(3);
  onReplicas(3, [&](int r) {
    std::vector<int> v = {r, r, r};
    collective()->broadcast(v.data(), sizeof(int) * 3, 2);
    collective()->barrier();
    out[static_cast<size_t>(r)] = v;
  });
  for (const auto &v : out)
    EXPECT_EQ(v, (std::vector<int>{2, 2, 2}));
}
