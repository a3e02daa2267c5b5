#include "draftgate/prompts/python_random.h"

namespace draftgate::prompts {
namespace {

constexpr std::size_t kN = 624, kM = 397;

}  // namespace

// init_genrand(19650218) then init_by_array(key) with key = the seed's 32-bit words, least
// significant first ([0] for 0): the reference MT19937 seeding CPython's random_seed calls.
PythonRandom::PythonRandom(std::uint64_t seed) {
  std::vector<std::uint32_t> key;
  for (std::uint64_t s = seed; s != 0; s >>= 32) key.push_back(static_cast<std::uint32_t>(s));
  if (key.empty()) key.push_back(0);
  state_[0] = 19650218u;
  for (std::size_t i = 1; i < kN; ++i)
    state_[i] =
        1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<std::uint32_t>(i);
  std::size_t i = 1, j = 0;
  for (std::size_t k = std::max(kN, key.size()); k > 0; --k) {
    state_[i] = (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1664525u)) + key[j] +
                static_cast<std::uint32_t>(j);
    ++i;
    ++j;
    if (i >= kN) {
      state_[0] = state_[kN - 1];
      i = 1;
    }
    if (j >= key.size()) j = 0;
  }
  for (std::size_t k = kN - 1; k > 0; --k) {
    state_[i] = (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1566083941u)) -
                static_cast<std::uint32_t>(i);
    ++i;
    if (i >= kN) {
      state_[0] = state_[kN - 1];
      i = 1;
    }
  }
  state_[0] = 0x80000000u;
  index_ = kN;
}

std::uint32_t PythonRandom::next32() {
  if (index_ >= kN) {
    for (std::size_t k = 0; k < kN; ++k) {
      const std::uint32_t y = (state_[k] & 0x80000000u) | (state_[(k + 1) % kN] & 0x7fffffffu);
      state_[k] = state_[(k + kM) % kN] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    index_ = 0;
  }
  std::uint32_t y = state_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

std::uint32_t PythonRandom::below(std::uint32_t n) {
  int bits = 0;
  for (std::uint32_t v = n; v != 0; v >>= 1) ++bits;
  // getrandbits(k) for k <= 32: the top k bits of one 32-bit output.
  for (;;) {
    const std::uint32_t r = bits == 0 ? 0 : next32() >> (32 - bits);
    if (r < n) return r;
  }
}

}  // namespace draftgate::prompts
