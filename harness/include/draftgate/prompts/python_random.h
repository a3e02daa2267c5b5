#pragma once
// CPython's `random` module, as far as benchmark.py uses it: random.seed(int) and random.shuffle,
// so `prompts build --shuffle-seed` picks the rows the benchmark's --max-samples picks. The
// Mersenne Twister MT19937 seeded by init_by_array with the seed's 32-bit words (CPython
// Modules/_randommodule.c, random_seed), and shuffle's Fisher-Yates with _randbelow by rejection
// over getrandbits (Lib/random.py); stable since Python 3.2.

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace draftgate::prompts {

class PythonRandom {
 public:
  explicit PythonRandom(std::uint64_t seed);  // random.seed(seed)

  // random.shuffle(items): for i from n−1 down to 1, swap items[i] with items[randbelow(i + 1)].
  template <typename T>
  void shuffle(std::vector<T>& items) {
    for (std::size_t i = items.size(); i-- > 1;)
      std::swap(items[i], items[below(static_cast<std::uint32_t>(i + 1))]);
  }

  std::uint32_t next32();  // genrand_uint32
  // _randbelow(n) for 0 < n < 2^32: getrandbits(n.bit_length()) until below n.
  std::uint32_t below(std::uint32_t n);

 private:
  std::array<std::uint32_t, 624> state_{};
  std::size_t index_ = 624;
};

}  // namespace draftgate::prompts
