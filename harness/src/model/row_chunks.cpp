#include "draftgate/model/row_chunks.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <memory>

namespace draftgate::model {

namespace {

// A share's chunks not yet taken, [front, back), in one word so that its owner (from the front)
// and a thief (from the back) never take the same chunk. A cache line each, so that the threads'
// takes from their own shares do not move one line back and forth between them.
class alignas(64) Share {
 public:
  void reset(std::uint32_t front, std::uint32_t back) { word_.store(pack(front, back)); }

  // The next chunk from the front (owner) or the back (thief); false when none is left.
  bool take(bool from_back, std::uint32_t& chunk) {
    std::uint64_t w = word_.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint32_t front = static_cast<std::uint32_t>(w >> 32);
      const std::uint32_t back = static_cast<std::uint32_t>(w);
      if (front >= back) return false;
      const std::uint64_t next = from_back ? pack(front, back - 1) : pack(front + 1, back);
      if (word_.compare_exchange_weak(w, next, std::memory_order_relaxed)) {
        chunk = from_back ? back - 1 : front;
        return true;
      }
    }
  }

 private:
  static std::uint64_t pack(std::uint32_t front, std::uint32_t back) {
    return (static_cast<std::uint64_t>(front) << 32) | back;
  }
  std::atomic<std::uint64_t> word_{0};
};

}  // namespace

void for_row_chunks(std::int64_t n, std::int64_t chunk, int threads,
                    const std::function<void(std::int64_t, std::int64_t)>& rows) {
  if (n <= 0) return;
  const std::int64_t chunks = (n + chunk - 1) / chunk;
  const int shares = static_cast<int>(std::min<std::int64_t>(std::max(threads, 1), chunks));
  if (shares == 1 || at::in_parallel_region()) return rows(0, n);
  auto run = [&](std::uint32_t c) {
    const std::int64_t begin = c * chunk;
    rows(begin, std::min(n, begin + chunk));
  };
  std::unique_ptr<Share[]> share(new Share[shares]);
  for (int s = 0; s < shares; ++s)
    share[s].reset(static_cast<std::uint32_t>(chunks * s / shares),
                   static_cast<std::uint32_t>(chunks * (s + 1) / shares));
  at::parallel_for(0, shares, 1, [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t s = first; s < last; ++s) {
      std::uint32_t c;
      while (share[s].take(false, c)) run(c);
      for (int d = 1; d < shares; ++d)  // then the others', nearest share first
        while (share[(s + d) % shares].take(true, c)) run(c);
    }
  });
}

}  // namespace draftgate::model
