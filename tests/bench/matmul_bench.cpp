// The few-row bf16 matmuls of decode (1 row), verify (8, 16 rows) and the drafter's block pass at
// real shapes, each kernel (and the AMX tiles, where the CPU has them) beside at::linear (oneDNN's
// bf16 path, what draftgate ran before) and against the memory read bandwidth measured in the same
// run (MemoryReadBandwidth in target_bench.cpp). The weights cycle through a stack larger than the
// last-level cache, as the layers of a decode step do, so every weight byte comes from memory — on
// huge pages, as a mapped checkpoint's are here (huge_page_memory.h; the counter huge_page_share
// says how much of the stack the kernel gave them).
//
// Report: bytes_per_second of a matmul / bytes_per_second of MemoryReadBandwidth = share of the
// bandwidth bound; `gflops` beside FewRowsInCache's says when many rows make a shape
// compute-bound instead.

#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "draftgate/model/amx_matmul.h"
#include "draftgate/model/few_row_matmul.h"
#include "draftgate/model/fma_gemm.h"
#include "draftgate/model/ops.h"
#include "huge_page_memory.h"

namespace draftgate::model {
namespace {

constexpr std::int64_t kStackBytes = std::int64_t{2} << 30;  // past any L3 here (480 MB seen)

struct WeightStack {
  bench::HugePageMemory memory;
  std::vector<at::Tensor> weights;
};

WeightStack weight_stack(std::int64_t n, std::int64_t k) {
  const std::int64_t bytes = n * k * 2;
  const std::int64_t count = std::max<std::int64_t>(2, (kStackBytes + bytes - 1) / bytes);
  WeightStack s{bench::HugePageMemory(static_cast<std::size_t>(count * bytes)), {}};
  for (std::int64_t i = 0; i < count; ++i)
    s.weights.push_back(s.memory.tensor(static_cast<std::size_t>(i * bytes), {n, k}, at::kBFloat16)
                            .copy_(at::randn({n, k}) / 32));
  return s;
}

constexpr int kAtLinear = -1, kAmx = -2;

at::Tensor product(const at::Tensor& x, const at::Tensor& w, int kernel) {
  if (kernel == kAtLinear) return at::linear(x, w);
  if (kernel == kAmx) return amx_matmul(x, w);
  return few_row_matmul(x, w, static_cast<FewRowKernel>(kernel));
}

void BM_FewRows(benchmark::State& state, std::int64_t n, std::int64_t k, int kernel) {
  const std::int64_t rows = state.range(0);
  const WeightStack stack = weight_stack(n, k);
  state.counters["huge_page_share"] = stack.memory.huge_page_share();
  const at::Tensor x = at::randn({rows, k}).to(at::kBFloat16);
  std::size_t next = 0;
  for (auto _ : state) {
    const at::Tensor& w = stack.weights[next];
    next = (next + 1) % stack.weights.size();
    benchmark::DoNotOptimize(product(x, w, kernel));
  }
  state.SetBytesProcessed(state.iterations() * n * k * 2);
  state.counters["gflops"] = benchmark::Counter(static_cast<double>(2 * rows * n * k) * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = at::get_num_threads();
}

// The kernel's compute ceiling: a 256 x 1024 weight (512 KB) that stays in cache, so `gflops` is
// what the arithmetic allows at that row count; a shape whose time from memory is near
// max(bytes / bandwidth, FLOPs / this) is at its bound.
void BM_FewRowsInCache(benchmark::State& state, int kernel) {
  const std::int64_t rows = state.range(0), n = 256, k = 1024;
  const at::Tensor w = (at::randn({n, k}) / 32).to(at::kBFloat16);
  const at::Tensor x = at::randn({rows, k}).to(at::kBFloat16);
  for (auto _ : state) benchmark::DoNotOptimize(product(x, w, kernel));
  state.counters["gflops"] = benchmark::Counter(static_cast<double>(2 * rows * n * k) * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = at::get_num_threads();
}

// A float32 x of a record's positions against a bf16 weight of the 27B target (the checks' float32
// forward): each path that takes it here beside OpenBLAS's float32 GEMM on the weight widened
// beforehand (the FLOP bound production_bench measures; the widening not timed).
enum class ManyRowPath { kOpenBlasPrewidened, kDense, kFmaAvx512, kFmaAvx2, kAmxTiles };

void BM_ManyRows(benchmark::State& state, std::int64_t n, std::int64_t k, ManyRowPath path) {
  const std::int64_t rows = state.range(0);
  const at::Tensor w = (at::randn({n, k}) / 64).to(at::kBFloat16);
  const at::Tensor wide = path == ManyRowPath::kOpenBlasPrewidened ? w.to(at::kFloat) : w;
  const at::Tensor x = at::randn({rows, k});
  for (auto _ : state) {
    switch (path) {
      case ManyRowPath::kOpenBlasPrewidened:
        benchmark::DoNotOptimize(at::linear(x, wide));
        break;
      case ManyRowPath::kDense:
        benchmark::DoNotOptimize(dense(x, w));
        break;
      case ManyRowPath::kFmaAvx512:
        benchmark::DoNotOptimize(fma_gemm(x, w, FmaGemmIsa::kAvx512));
        break;
      case ManyRowPath::kFmaAvx2:
        benchmark::DoNotOptimize(fma_gemm(x, w, FmaGemmIsa::kAvx2));
        break;
      case ManyRowPath::kAmxTiles:
        benchmark::DoNotOptimize(amx_matmul(x, w));
        break;
    }
  }
  state.counters["gflops"] = benchmark::Counter(static_cast<double>(2 * rows * n * k) * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = at::get_num_threads();
}

bool register_all() {
  // Qwen3-0.6B: MLP gate/up (3072 x 1024) and down (1024 x 3072), lm_head (151936 x 1024);
  // Qwen3-8B: MLP gate/up (12288 x 4096) and down (4096 x 12288).
  const std::vector<std::tuple<const char*, std::int64_t, std::int64_t>> shapes = {
      {"qwen3-0.6b/gate_up", 3072, 1024},
      {"qwen3-0.6b/down", 1024, 3072},
      {"qwen3-0.6b/lm_head", 151936, 1024},
      {"qwen3-8b/gate_up", 12288, 4096},
      {"qwen3-8b/down", 4096, 12288}};
  std::vector<std::pair<std::string, int>> kernels = {{"at_linear", kAtLinear}};
  for (FewRowKernel kernel : {FewRowKernel::kBf16Dot, FewRowKernel::kFloat32Fma})
    if (few_row_kernel_available(kernel))
      kernels.emplace_back(few_row_kernel_name(kernel), static_cast<int>(kernel));
  if (amx_available()) kernels.emplace_back("amx", kAmx);
  for (const auto& [shape, n, k] : shapes)
    for (const auto& [kernel_name, kernel] : kernels)
      benchmark::RegisterBenchmark(("FewRows/" + std::string(shape) + "/" + kernel_name).c_str(),
                                   BM_FewRows, n, k, kernel)
          ->ArgName("rows")
          ->Arg(1)
          ->Arg(8)
          ->Arg(16)
          ->Unit(benchmark::kMicrosecond)
          ->MinTime(0.5);
  for (const auto& [kernel_name, kernel] : kernels)
    benchmark::RegisterBenchmark(("FewRowsInCache/" + kernel_name).c_str(), BM_FewRowsInCache,
                                 kernel)
        ->ArgName("rows")
        ->Arg(1)
        ->Arg(8)
        ->Arg(16)
        ->Unit(benchmark::kMicrosecond)
        ->MinTime(0.3);
  // Qwen3.6-27B: MLP gate/up (17408 x 5120) and down (5120 x 17408).
  std::vector<std::pair<std::string, ManyRowPath>> paths = {
      {"openblas_prewidened", ManyRowPath::kOpenBlasPrewidened}, {"dense", ManyRowPath::kDense}};
  if (fma_gemm_available(FmaGemmIsa::kAvx512))
    paths.emplace_back("fma_avx512", ManyRowPath::kFmaAvx512);
  if (fma_gemm_available(FmaGemmIsa::kAvx2)) paths.emplace_back("fma_avx2", ManyRowPath::kFmaAvx2);
  if (amx_available()) paths.emplace_back("amx", ManyRowPath::kAmxTiles);
  for (const auto& [shape, n, k] : std::vector<std::tuple<const char*, std::int64_t, std::int64_t>>{
           {"qwen36-27b/gate_up", 17408, 5120}, {"qwen36-27b/down", 5120, 17408}})
    for (const auto& [path_name, path] : paths)
      benchmark::RegisterBenchmark(("ManyRows/" + std::string(shape) + "/" + path_name).c_str(),
                                   BM_ManyRows, n, k, path)
          ->ArgName("rows")
          ->Arg(128)
          ->Arg(512)
          ->Unit(benchmark::kMillisecond)
          ->MinTime(1.0);
  return true;
}

const bool registered = register_all();

}  // namespace
}  // namespace draftgate::model
