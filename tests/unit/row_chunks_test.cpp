// Chunked rows over threads (model/row_chunks.h): every row once, in whole chunks, and a share
// whose thread is held is finished by the others.

#include "draftgate/model/row_chunks.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

namespace draftgate::model {
namespace {

// ATen's thread count for one test, restored after it.
class Threads {
 public:
  explicit Threads(int n) : saved_(at::get_num_threads()) { at::set_num_threads(n); }
  ~Threads() { at::set_num_threads(saved_); }

 private:
  int saved_;
};

TEST(RowChunks, RunsEveryRowOnceInWholeChunks) {
  for (int threads : {1, 2, 3, 8}) {
    const Threads pool(threads);
    for (std::int64_t n : {1, 23, 95, 96, 97, 1000, 20011})
      for (std::int64_t chunk : {1, 24, 96}) {
        std::vector<std::atomic<int>> runs(static_cast<std::size_t>(n));
        std::atomic<bool> bad_range{false};
        for_row_chunks(n, chunk, threads, [&](std::int64_t begin, std::int64_t end) {
          // One thread: one call over all rows; more: whole chunks (the last may be short).
          const bool one_call = threads == 1 || n <= chunk;
          if (one_call ? begin != 0 || end != n
                       : begin % chunk != 0 || end - begin > chunk || end > n || begin >= end)
            bad_range = true;
          for (std::int64_t r = begin; r < end; ++r) ++runs[static_cast<std::size_t>(r)];
        });
        EXPECT_FALSE(bad_range) << "n " << n << ", chunk " << chunk << ", threads " << threads;
        for (std::int64_t r = 0; r < n; ++r)
          ASSERT_EQ(runs[static_cast<std::size_t>(r)], 1)
              << "row " << r << " of " << n << ", chunk " << chunk << ", threads " << threads;
      }
  }
}

// The thread that runs chunk 0 is held until every other chunk has run: its own share's other
// chunks can only run if another thread takes them (with fixed shares it would wait forever;
// the wait gives up after 20 s and the count says how far the others got).
TEST(RowChunks, AHeldThreadsShareIsFinishedByTheOthers) {
  const Threads pool(2);
  const std::int64_t chunk = 8, n = 40 * chunk;
  std::mutex m;
  std::condition_variable cv;
  int done = 0, done_at_release = 0;
  bool released = true;
  for_row_chunks(n, chunk, 2, [&](std::int64_t begin, std::int64_t) {
    std::unique_lock<std::mutex> lock(m);
    if (begin == 0) {
      released = cv.wait_for(lock, std::chrono::seconds(20), [&] { return done == n / chunk - 1; });
      done_at_release = done;
    } else {
      ++done;
      cv.notify_all();
    }
  });
  EXPECT_TRUE(released) << "only " << done_at_release << " of " << n / chunk - 1
                        << " other chunks ran while chunk 0's thread was held";
}

// Called from a thread of a parallel region (this test is compiled without OpenMP, so the outer
// region is for_row_chunks' own), it runs all rows in one call on that thread.
TEST(RowChunks, RunsInOneCallInsideAParallelRegion) {
  const Threads pool(2);
  std::atomic<int> calls{0}, whole{0};
  for_row_chunks(2, 1, 2, [&](std::int64_t, std::int64_t) {
    for_row_chunks(1000, 24, 2, [&](std::int64_t begin, std::int64_t end) {
      ++calls;
      if (begin == 0 && end == 1000) ++whole;
    });
  });
  EXPECT_EQ(calls, 2);  // once per outer chunk
  EXPECT_EQ(whole, 2);
}

}  // namespace
}  // namespace draftgate::model
