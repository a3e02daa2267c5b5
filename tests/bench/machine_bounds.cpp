#include "machine_bounds.h"

#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "draftgate/model/amx_matmul.h"
#include "draftgate/model/few_row_matmul.h"
#include "huge_page_memory.h"

namespace draftgate::bench {

double checkpoint_bytes(const io::Checkpoint& ckpt) {
  double bytes = 0;
  for (const auto& n : ckpt.names()) bytes += static_cast<double>(ckpt.info(n)->nbytes());
  const auto embedding = ckpt.info("model.embed_tokens.weight");
  if (embedding && ckpt.info("lm_head.weight")) bytes -= static_cast<double>(embedding->nbytes());
  return bytes;
}

namespace {
// Seconds `f` takes.
template <class F>
double seconds(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Bytes per second of one sum of the buffer.
double one_read(const BandwidthBuffer& held) {
  return static_cast<double>(held.values.nbytes()) /
         seconds([&] { benchmark::DoNotOptimize(held.values.sum().item<float>()); });
}
}  // namespace

double read_bandwidth() {
  const BandwidthBuffer held = bandwidth_buffer();
  double best = 0;
  for (int i = 0; i < 3; ++i) best = std::max(best, one_read(held));
  return best;
}

double memory_latency_ns() {
  constexpr std::int64_t kLines = std::int64_t{16} << 20, kLineWords = 8;  // 1 GiB of 64 B lines
  HugePageMemory memory(kLines * 64);
  const at::Tensor words = memory.tensor(0, {kLines * kLineWords}, at::kLong);
  auto* next = words.data_ptr<std::int64_t>();
  // Sattolo's shuffle: one cycle through every line, in an order no prefetcher predicts.
  std::vector<std::int64_t> order(kLines);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 random(2026);
  for (std::int64_t i = kLines - 1; i > 0; --i)
    std::swap(order[i], order[std::uniform_int_distribution<std::int64_t>(0, i - 1)(random)]);
  for (std::int64_t i = 0; i < kLines; ++i) next[order[i] * kLineWords] = order[(i + 1) % kLines];
  constexpr long kLoads = 1 << 20;
  double best = 0;
  std::int64_t at = 0;
  for (int round = 0; round < 3; ++round) {
    const double s = seconds([&] {
      for (long i = 0; i < kLoads; ++i) at = next[at * kLineWords];
    });
    best = round == 0 ? s : std::min(best, s);
  }
  benchmark::DoNotOptimize(at);
  return best / kLoads * 1e9;
}

double paired_read_share(double bytes, int pairs, const std::function<void()>& pass) {
  const BandwidthBuffer held = bandwidth_buffer();
  std::vector<double> shares;
  for (int i = 0; i < pairs; ++i) {
    const double bound_s = bytes / one_read(held);
    shares.push_back(bound_s / seconds(pass));
  }
  std::sort(shares.begin(), shares.end());
  const std::size_t mid = shares.size() / 2;
  return shares.size() % 2 == 1 ? shares[mid] : (shares[mid - 1] + shares[mid]) / 2;
}

typedef float F32x8 __attribute__((vector_size(32)));

// The few-row float32 kernel's own vectors (8 lanes), cloned per instruction set as it is.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
double
float32_fma_chains(long steps, float* sink) {
  constexpr int kChains = 16;
  F32x8 acc[kChains];
  for (int c = 0; c < kChains; ++c)
    acc[c] = F32x8{} + static_cast<float>(c);  // distinct, or the compiler merges them
  volatile float one = 1.0f;  // not a constant: x * 1 would fold to x, and the FMA to an add
  const F32x8 scale = F32x8{} + one, step = F32x8{} + 0x1p-24f;
  for (long s = 0; s < steps; ++s)
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * scale + step;
  F32x8 total = {};
  for (const F32x8& a : acc) total += a;
  for (int i = 0; i < 8; ++i) *sink += total[i];
  return static_cast<double>(steps) * kChains * 16;
}

namespace {
enum class Peak { kAmx, kBf16Dot, kFloat32Fma };

double chains(Peak kind, long steps, float* sink) {
#if DRAFTGATE_BENCH_BF16_DOT
  if (kind == Peak::kBf16Dot) return bf16_dot_chains(steps, sink);
#endif
  return float32_fma_chains(steps, sink);
}

Peak peak_kind() {
  if (model::amx_available()) return Peak::kAmx;
  return model::best_few_row_kernel(at::kBFloat16) == model::FewRowKernel::kBf16Dot
             ? Peak::kBf16Dot
             : Peak::kFloat32Fma;
}
}  // namespace

const char* dot_product_instruction() {
  switch (peak_kind()) {
    case Peak::kAmx:
      return "amx";
    case Peak::kBf16Dot:
      return "vdpbf16ps";
    default:
      return "float32 fma";
  }
}

double dot_product_peak() {
  const Peak kind = peak_kind();
  if (kind == Peak::kAmx) return 0;
  const int threads = at::get_num_threads();
  constexpr long kSteps = 2 << 20;  // ~10-20 ms a thread
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    std::vector<double> flops(threads, 0);
    std::vector<float> sinks(threads, 0);
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&, t] { flops[t] = chains(kind, kSteps, &sinks[t]); });
    for (auto& w : workers) w.join();
    const std::chrono::duration<double> s = std::chrono::steady_clock::now() - start;
    double total = 0;
    for (int t = 0; t < threads; ++t) total += flops[t];
    benchmark::DoNotOptimize(sinks.data());
    best = std::max(best, total / s.count());
  }
  return best;
}

}  // namespace draftgate::bench
