// Target engine speed and memory: prefill throughput and decode-step latency on a tiny model, a
// Qwen3-0.6B-shaped random model and a comparable Qwen3.5 hybrid, plus the machine's memory read
// bandwidth (the bound for decode, which streams every weight once per token). compare_with_peer.py
// runs these beside the Python peer and prints the ratios reported in docs/performance.md.
//
// Models are written on first use under $DRAFTGATE_BENCH_MODELS (default: bench-models/ in the
// working dir).

#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <map>
#include <thread>
#include <tuple>
#include <vector>

#include "bench_models.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/keep_freed_memory.h"
#include "draftgate/model/big_block_cache.h"
#include "draftgate/model/fp8_weights.h"
#include "draftgate/model/random_checkpoint.h"
#include "draftgate/model/target.h"
#include "huge_page_memory.h"
#include "machine_bounds.h"

namespace draftgate::model {
namespace {

struct Loaded {
  io::Checkpoint checkpoint;
  std::unique_ptr<TargetModel> model;
};

Loaded& load(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Loaded>> cache;
  auto& slot = cache[name];
  if (!slot) {
    auto ckpt = io::Checkpoint::open(bench::target_dir(name));
    slot = std::make_unique<Loaded>(Loaded{std::move(ckpt), nullptr});
    slot->model = TargetModel::load(slot->checkpoint, TargetOptions{});
  }
  return *slot;
}

std::vector<std::int64_t> ids(std::int64_t n, std::int64_t vocab) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(i * 7919 % vocab);
  return v;
}

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

double weights_mb(const io::Checkpoint& ckpt) {
  double bytes = 0;
  for (const auto& n : ckpt.names()) bytes += static_cast<double>(ckpt.info(n)->nbytes());
  return bytes / (1024.0 * 1024.0);
}

void BM_Prefill(benchmark::State& state, const std::string& name) {
  Loaded& l = load(name);
  const auto tokens = ids(state.range(0), l.model->config().vocab);
  for (auto _ : state) benchmark::DoNotOptimize(l.model->forward(tokens, {}).logits);
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["weights_MB"] = weights_mb(l.checkpoint);
  state.counters["peak_rss_MB"] = peak_rss_mb();
  state.counters["threads"] = at::get_num_threads();
}

// One token (decode) or a block of `rows` tokens (a verify pass) after `context` committed tokens,
// rolled back after each step so the context length stays fixed.
class Steps {
 public:
  Steps(const std::string& name, std::int64_t context, std::int64_t rows)
      : loaded_(load(name)), state_(loaded_.model->new_state()) {
    loaded_.model->extend(state_, ids(context, loaded_.model->config().vocab));
    loaded_.model->commit_all(state_);
    block_ = ids(rows, loaded_.model->config().vocab);
  }
  void step() {
    benchmark::DoNotOptimize(loaded_.model->extend(state_, block_).logits);
    loaded_.model->commit(state_, {});
  }
  const Loaded& loaded() const { return loaded_; }

 private:
  Loaded& loaded_;
  TargetState state_;
  std::vector<std::int64_t> block_;
};

void BM_DecodeStep(benchmark::State& state, const std::string& name) {
  Steps steps(name, state.range(0), state.range(1));
  for (auto _ : state) steps.step();
  const Loaded& l = steps.loaded();
  state.counters["weights_MB"] = weights_mb(l.checkpoint);
  // Its products' arithmetic, one FLOP per row and byte of bf16 weight (the bound beside
  // DotProductPeak's rate; attention's few FLOPs over 64 positions left out).
  state.counters["flops"] =
      static_cast<double>(state.range(1)) * bench::checkpoint_bytes(l.checkpoint);
  state.counters["peak_rss_MB"] = peak_rss_mb();
  // How much of the checkpoint's resident mapping is mapped 2 MB at a time (after the load's
  // settle_in_huge_pages): the rest costs a TLB miss every 4 KB of each pass's read.
  if (const auto pages = l.checkpoint.mapped_pages(); pages && pages->resident_bytes > 0)
    state.counters["mapped_2mb_share"] =
        static_cast<double>(pages->file_huge_bytes) / static_cast<double>(pages->resident_bytes);
  state.counters["threads"] = at::get_num_threads();
}

// The same steps against the read bound measured just before each of 7 of them
// (machine_bounds.h). Registered after DecodeStep and VerifyStep: its 1 GiB bandwidth buffer would
// count in their peak RSS.
void BM_PairedBound(benchmark::State& state, const std::string& name) {
  Steps steps(name, state.range(0), state.range(1));
  const double bytes = bench::checkpoint_bytes(steps.loaded().checkpoint);
  double share = 0;
  for (auto _ : state) share = bench::paired_read_share(bytes, 7, [&] { steps.step(); });
  state.counters["of_paired_bound"] = share;
  state.counters["threads"] = at::get_num_threads();
}

// The latency of one load from memory (machine_bounds.h): with MemoryReadBandwidth, the bytes a
// decode's reads must keep in flight.
void BM_MemoryLatency(benchmark::State& state) {
  double ns = 0;
  for (auto _ : state) ns = bench::memory_latency_ns();
  state.counters["ns_per_load"] = ns;
}

// The peak of the instruction the few-row products multiply with (machine_bounds.h): with
// MemoryReadBandwidth, the roofline of a decode or verify step.
void BM_DotProductPeak(benchmark::State& state) {
  double peak = 0;
  for (auto _ : state) peak = bench::dot_product_peak();
  state.counters["flops_per_second"] = peak;
  state.SetLabel(bench::dot_product_instruction());
  state.counters["threads"] = at::get_num_threads();
}

// Reads a 1 GiB buffer on huge pages, as a mapped checkpoint's are here (huge_page_memory.h): the
// memory bandwidth that bounds a decode step.
void BM_MemoryReadBandwidth(benchmark::State& state) {
  const bench::BandwidthBuffer buffer = bench::bandwidth_buffer();
  state.counters["huge_page_share"] = buffer.memory.huge_page_share();
  for (auto _ : state) benchmark::DoNotOptimize(buffer.values.sum());
  state.SetBytesProcessed(state.iterations() * buffer.values.nbytes());
}

// Dequantizing one block-FP8 weight to float32 and then to bf16 (what a streamed FP8 layer costs on
// top of its bf16 twin), at the shapes of a Qwen3.6-27B layer (hidden 5120, MLP 17408, 24 query
// heads of 256 doubled by the gate, 4 KV heads): the codes are random finite e4m3 values in 128x128
// blocks.
void BM_DequantizeFp8(benchmark::State& state, std::int64_t rows, std::int64_t cols) {
  io::Fp8Scheme scheme;
  const at::Tensor codes = at::randint(0, 0x7F, {rows, cols}, at::kByte);
  const at::Tensor scale = at::rand({(rows + 127) / 128, (cols + 127) / 128}, at::kFloat) + 0.01;
  for (auto _ : state)
    benchmark::DoNotOptimize(dequantize_fp8_blocks(codes, scale, scheme).to(at::kBFloat16));
  state.SetItemsProcessed(state.iterations() * rows * cols);
  state.counters["threads"] = at::get_num_threads();
}

void register_all() {
  // Qwen3.6-27B: a full-attention layer's q (12288 x 5120), k/v (1024 x 5120), o (5120 x 6144) and
  // the MLP's gate/up (17408 x 5120) and down (5120 x 17408).
  for (const auto& [label, rows, cols] :
       std::vector<std::tuple<const char*, std::int64_t, std::int64_t>>{
           {"q_proj", 12288, 5120},
           {"kv_proj", 1024, 5120},
           {"o_proj", 5120, 6144},
           {"gate_up_proj", 17408, 5120},
           {"down_proj", 5120, 17408}})
    benchmark::RegisterBenchmark((std::string("DequantizeFp8/qwen3.6-27b/") + label).c_str(),
                                 BM_DequantizeFp8, rows, cols)
        ->Unit(benchmark::kMillisecond);
  for (const char* name : {"tiny-qwen3", "tiny-qwen3_5", "qwen3-0.6b", "qwen3_5-0.8b"}) {
    benchmark::RegisterBenchmark((std::string("Prefill/") + name).c_str(), BM_Prefill,
                                 std::string(name))
        ->Arg(128)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("DecodeStep/") + name).c_str(), BM_DecodeStep,
                                 std::string(name))
        ->Args({64, 1})
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("VerifyStep/") + name).c_str(), BM_DecodeStep,
                                 std::string(name))
        ->Args({64, 8})
        ->Args({64, 16})
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("PairedBound/") + name).c_str(), BM_PairedBound,
                                 std::string(name))
        ->Args({64, 1})
        ->Args({64, 8})
        ->Args({64, 16})
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("MemoryReadBandwidth", BM_MemoryReadBandwidth)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("MemoryLatency", BM_MemoryLatency)
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("DotProductPeak", BM_DotProductPeak)
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond);
}

}  // namespace
}  // namespace draftgate::model

int main(int argc, char** argv) {
  draftgate::keep_freed_memory();  // as draftgate itself runs
  draftgate::model::cache_big_cpu_blocks();
  at::set_num_threads(static_cast<int>(std::thread::hardware_concurrency()));
  // --make-models: write the benchmark models and exit, so a later run's peak RSS excludes their
  // generation.
  if (argc == 2 && std::string(argv[1]) == "--make-models") {
    for (const auto& [name, spec] : draftgate::bench::target_models())
      draftgate::bench::target_dir(name);
    for (const char* target : {"tiny-qwen3_5", "qwen3-0.6b"}) draftgate::bench::drafter_dir(target);
    return 0;
  }
  draftgate::model::register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
