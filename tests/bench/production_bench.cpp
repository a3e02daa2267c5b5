// Production-shape benchmark (issue 13): the three target-side step-record checks — loss_type,
// target_logits_noise_free and fc_excludes_target_layer with its dynamic half — run by
// `draftgate check` with its defaults, as a user would, on a bf16 target with the real
// Qwen3.6-27B text shapes (53.8 GB of weights), with the wall time, peak RSS, CPU time and bytes
// read of that process (from the peak_rss launcher) and the bounds of this machine: the FLOPs of
// one float32 forward at the measured GEMM throughput, and the checkpoint's bytes at the measured
// cold read rate.
//
// The target is a random checkpoint written with a repeated block (RandomTargetSpec::repeat_block:
// each tensor a window of one random sequence, so every row of every matrix is distinct and the
// activations finite and varied; writing it takes disk time only). The drafter is a random
// 1-layer one with the Qwen3.6-27B DFlash taps. The step record is made as a trainer makes one: a
// float32 forward of the target over the sequence gives fc_input (the taps) and the teacher logits,
// labels are the teacher's greedy tokens, the drafter logits half the teacher's plus noise (a
// drafter in training: loss_type recomputes the loss from the recorded logits, it does not run the
// drafter) and the logged loss their CE. The buggy record adds noise of 0.05 of the teacher's RMS
// to the teacher logits (the recipe's fc-input noise put on the teacher path).
//
// Files (54 GB): under $DRAFTGATE_PRODUCTION_DIR, kept for the next run when set; otherwise in a
// fresh directory under the working directory, deleted when the benchmark ends. Before every
// `check` the checkpoint is dropped from the page cache, so each run reads it cold.
//
//   nice -n 5 build/production_bench --benchmark_filter='StepRecordChecks/128'

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "draftgate/io/checkpoint.h"
#include "draftgate/io/safetensors.h"
#include "draftgate/model/random_checkpoint.h"
#include "draftgate/model/sequence_target.h"
#include "draftgate/train/recipe.h"
#include "draftgate/train/step_record.h"

namespace draftgate::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The text decoder of Qwen3.6-27B as its config.json declares it.
model::RandomTargetSpec qwen36_27b() {
  model::RandomTargetSpec s;
  s.family = model::Family::kQwen3_5, s.layout = model::TargetLayout::kTextResave;
  s.hidden = 5120, s.intermediate = 17408, s.vocab = 248320, s.layers = 64;
  s.heads = 24, s.kv_heads = 4, s.head_dim = 256, s.full_attention_interval = 4;
  s.linear_k_heads = 16, s.linear_v_heads = 48, s.linear_k_dim = 128, s.linear_v_dim = 128;
  s.partial_rotary_factor = 0.25, s.tied = false, s.dtype = at::kBFloat16;
  s.repeat_block = 1048573;  // prime, above every row length
  return s;
}
const std::vector<std::int64_t> kTaps = {1, 16, 31, 46, 61};  // qwen3.6-27b-dflash.json
constexpr std::int64_t kBlock = 16;

// The working directory: kept when given, removed at exit when made here.
struct WorkDir {
  fs::path path;
  bool owned = false;
  WorkDir() {
    if (const char* env = std::getenv("DRAFTGATE_PRODUCTION_DIR")) {
      path = env;
    } else {
      path = fs::absolute("production-bench-" + std::to_string(::getpid()));
      owned = true;
    }
    fs::create_directories(path);
  }
  ~WorkDir() {
    std::error_code ec;
    if (owned) fs::remove_all(path, ec);
  }
};
const fs::path& work() {
  static WorkDir dir;
  return dir.path;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Drops a file's pages from the page cache (they are clean), so the next reader reads it cold.
void evict(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

const fs::path& target_dir() {
  static const fs::path dir = [] {
    const fs::path d = work() / "qwen36-27b-bf16";
    if (!fs::exists(d / "model.safetensors")) {
      const auto start = Clock::now();
      model::write_random_target(d, qwen36_27b());
      const double s = seconds_since(start);
      std::cerr << "wrote " << d << ": " << fs::file_size(d / "model.safetensors") / 1e9
                << " GB in " << s << " s\n";
    }
    return d;
  }();
  return dir;
}

const fs::path& drafter_dir() {
  static const fs::path dir = [] {
    const fs::path d = work() / "drafter";
    if (!fs::exists(d / "model.safetensors")) {
      const model::RandomTargetSpec t = qwen36_27b();
      model::RandomDrafterSpec s;
      s.target_hidden = t.hidden, s.target_layers = t.layers, s.vocab = t.vocab;
      s.intermediate = 1024, s.layers = 1, s.heads = 8, s.kv_heads = 2, s.head_dim = 128;
      s.block_size = kBlock, s.mask_token_id = t.vocab - 1, s.target_layer_ids = kTaps;
      model::write_random_drafter(d, s);
    }
    return d;
  }();
  return dir;
}

struct Records {
  fs::path reference, noisy;
};

// A trainer's step over `positions` tokens, and the same step with noise on the teacher.
Records records(std::int64_t positions) {
  const Records r{work() / ("record-" + std::to_string(positions) + ".safetensors"),
                  work() / ("record-" + std::to_string(positions) + "-noisy.safetensors")};
  if (fs::exists(r.reference) && fs::exists(r.noisy)) return r;
  const auto vocab = qwen36_27b().vocab;
  train::StepRecord rec;
  for (std::int64_t i = 0; i < positions; ++i) rec.input_ids.push_back((i * 104729 + 17) % vocab);
  const std::int64_t prompt = 16;
  rec.loss_mask.assign(positions, 1);
  for (std::int64_t i = 0; i < prompt; ++i) rec.loss_mask[i] = 0;
  for (std::int64_t a = prompt; a + kBlock <= positions; a += kBlock) rec.anchors.push_back(a);
  rec.block_size = kBlock, rec.gamma = 7.0, rec.mask_token_id = vocab - 1;
  rec.target_layer_ids = kTaps, rec.loss = train::LossType::kHardCrossEntropy, rec.step = 1;
  rec.teacher_dtype = rec.drafter_dtype = train::ComputePrecision::kF32;

  const auto start = Clock::now();
  const io::Checkpoint ckpt = io::Checkpoint::open(target_dir());
  model::TargetOptions options;
  options.dtype = at::kFloat;
  const auto target = model::open_sequence_target(ckpt, options, model::TargetPath::kStreamed);
  const model::ForwardResult fwd = target->forward(rec.input_ids, kTaps);
  std::cerr << "recorded a " << positions << "-position step in " << seconds_since(start) << " s\n";
  std::vector<at::Tensor> taps;
  for (auto t : kTaps) taps.push_back(fwd.taps.at(t));
  rec.fc_input = at::cat(taps, -1);
  rec.teacher_logits = fwd.logits;
  train::BlockTargets targets =
      train::block_targets(rec.input_ids, rec.loss_mask, rec.anchors, kBlock, rec.gamma);
  const at::Tensor teacher_blocks = train::block_teacher_logits(fwd.logits, rec.anchors, kBlock);
  targets.labels = teacher_blocks.argmax(-1) * (targets.weight > 0);
  rec.labels = targets.labels;
  rec.weights = targets.weight;
  const auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
  rec.drafter_logits = 0.5 * teacher_blocks + at::randn(teacher_blocks.sizes(), gen);
  rec.logged_loss =
      train::weighted_cross_entropy(rec.drafter_logits.to(at::kDouble), targets).item<double>();
  train::write_step_record(r.reference, rec);

  const double rms = rec.teacher_logits.pow(2).mean().sqrt().item<double>();
  rec.teacher_logits = rec.teacher_logits + 0.05 * rms * at::randn(fwd.logits.sizes(), gen);
  train::write_step_record(r.noisy, rec);
  return r;
}

// FLOPs of one forward over `positions` tokens: every decoder matrix and lm_head, 2 per
// multiply-add (attention scores and the GDN recurrence add under 1 % at these lengths).
double forward_flops(const io::Checkpoint& ckpt, std::int64_t positions) {
  double params = 0;
  for (const auto& name : ckpt.names()) {
    const io::TensorInfo* info = ckpt.info(name);
    if (info->shape.size() == 2 && name.find("embed_tokens") == std::string::npos)
      params += static_cast<double>(info->numel());
  }
  return 2.0 * static_cast<double>(positions) * params;
}

// float32 GEMM throughput at the target's largest shape: [positions, hidden] x [hidden, MLP].
double gemm_flops_per_s(std::int64_t positions, at::ScalarType dtype, int repeats = 3) {
  const auto s = qwen36_27b();
  const at::Tensor x = at::randn({positions, s.hidden}).to(dtype);
  const at::Tensor w = at::randn({s.intermediate, s.hidden}).to(dtype);
  at::matmul(x, w.t());
  const auto start = Clock::now();
  for (int i = 0; i < repeats; ++i) benchmark::DoNotOptimize(at::matmul(x, w.t()));
  return 2.0 * positions * s.hidden * s.intermediate * repeats / seconds_since(start);
}

// Cold sequential read rate of the checkpoint: `bytes` from its middle after eviction.
double cold_read_bytes_per_s(const fs::path& file, std::uint64_t bytes) {
  evict(file);
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  std::vector<char> buf(16 << 20);
  const auto start = Clock::now();
  off_t at = static_cast<off_t>(fs::file_size(file) / 2);
  std::uint64_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), at);
    if (n <= 0) break;
    done += static_cast<std::uint64_t>(n), at += n;
  }
  const double rate = static_cast<double>(done) / seconds_since(start);
  ::close(fd);
  evict(file);
  return rate;
}

struct Measured {
  int exit_code = -1;
  double wall_s = 0, peak_rss_kib = 0, user_s = 0, system_s = 0, read_bytes = 0;
  nlohmann::json report;
};

// `draftgate check` on a record, under the peak_rss launcher, the checkpoint cold.
Measured run_checks(const fs::path& record) {
  const fs::path target = target_dir();
  evict(target / "model.safetensors");
  const fs::path rss = work() / "peak_rss.txt", report = work() / "report.json";
  fs::remove(report);
  const std::string cmd = std::string(DRAFTGATE_PEAK_RSS) + " " + rss.string() + " " +
                          DRAFTGATE_BINARY + " check --target " + target.string() + " --drafter " +
                          drafter_dir().string() + " --step-record " + record.string() +
                          " --only loss_type,target_logits_noise_free,fc_excludes_target_layer"
                          " --report " +
                          report.string() + " --junit " + (work() / "report.xml").string() + " > " +
                          (work() / "check.out").string() + " 2> " +
                          (work() / "check.err").string();
  Measured m;
  const auto start = Clock::now();
  if (std::system(cmd.c_str()) != 0) m.exit_code = -2;
  m.wall_s = seconds_since(start);
  std::ifstream in(rss);
  in >> m.exit_code >> m.peak_rss_kib >> m.user_s >> m.system_s >> m.read_bytes;
  std::ifstream r(report);
  if (r) m.report = nlohmann::json::parse(r, nullptr, /*allow_exceptions=*/false);
  return m;
}

// "check=status (seconds) …" from the JSON report and the JUnit times.
std::string verdicts(const Measured& m) {
  if (!m.report.is_object() || !m.report.contains("results")) return "no report";
  std::ifstream junit(work() / "report.xml");
  const std::string xml((std::istreambuf_iterator<char>(junit)), std::istreambuf_iterator<char>());
  std::string out;
  for (const auto& c : m.report["results"]) {
    const std::string name = c.value("check", "?");
    out += name + "=" + c.value("status", "?");
    const auto at = xml.find("name=\"" + name + "\"");
    const auto time = xml.find("time=\"", at);
    if (at != std::string::npos && time != std::string::npos)
      out += " (" + xml.substr(time + 6, xml.find('"', time + 6) - time - 6) + " s)";
    out += "; ";
  }
  return out;
}

double load_average() {
  double load = 0;
  std::ifstream("/proc/loadavg") >> load;
  return load;
}

// One run of the three checks on the reference record (all three must pass) or, with noisy = 1,
// on the buggy one (target_logits_noise_free alone must fail).
void BM_StepRecordChecks(benchmark::State& state) {
  const std::int64_t positions = state.range(0);
  const bool noisy = state.range(1) != 0;
  const fs::path target = target_dir();
  drafter_dir();
  const Records recs = records(positions);
  const io::Checkpoint ckpt = io::Checkpoint::open(target);
  const double bytes = static_cast<double>(fs::file_size(target / "model.safetensors"));
  const double flops = forward_flops(ckpt, positions);
  const double gemm = gemm_flops_per_s(positions, at::kFloat);
  const double read_rate = cold_read_bytes_per_s(target / "model.safetensors", 4ull << 30);
  const double load_before = load_average();
  Measured m;
  for (auto _ : state) {
    m = run_checks(noisy ? recs.noisy : recs.reference);
    state.SetIterationTime(m.wall_s);
  }
  const bool expected = noisy ? m.exit_code == 1 && m.report["summary"]["fail"] == 1
                              : m.exit_code == 0 && m.report["summary"]["pass"] == 3;
  const std::string v = verdicts(m);
  if (!expected)
    state.SkipWithError(("unexpected verdicts (exit " + std::to_string(m.exit_code) + "): " + v +
                         " see " + (work() / "check.err").string())
                            .c_str());
  const double flop_bound = flops / gemm, io_bound = bytes / read_rate;
  state.counters["wall_s"] = m.wall_s;
  state.counters["peak_rss_GB"] = m.peak_rss_kib * 1024 / 1e9;
  state.counters["cpu_s"] = m.user_s + m.system_s;
  state.counters["sys_s"] = m.system_s;
  state.counters["cpu_busy"] = (m.user_s + m.system_s) / (m.wall_s * at::get_num_threads());
  state.counters["read_GB"] = m.read_bytes / 1e9;
  state.counters["weights_GB"] = bytes / 1e9;
  state.counters["forward_TFLOP"] = flops / 1e12;
  state.counters["gemm_GFLOPs"] = gemm / 1e9;
  state.counters["read_GBps"] = read_rate / 1e9;
  state.counters["flop_bound_s"] = flop_bound;
  state.counters["io_bound_s"] = io_bound;
  state.counters["wall_per_bound"] = m.wall_s / std::max(flop_bound, io_bound);
  state.counters["load_before"] = load_before;
  state.counters["load_after"] = load_average();
  state.SetLabel(v);
}
BENCHMARK(BM_StepRecordChecks)
    ->ArgsProduct({{128, 512}, {0, 1}})
    ->ArgNames({"positions", "noisy"})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

// The GEMM throughput the FLOP bound uses, float32 and the stored bf16.
void BM_Gemm(benchmark::State& state) {
  const auto dtype = state.range(1) ? at::kBFloat16 : at::kFloat;
  double rate = 0;
  for (auto _ : state) rate = gemm_flops_per_s(state.range(0), dtype, 1);
  state.counters["GFLOPs"] = rate / 1e9;
}
BENCHMARK(BM_Gemm)
    ->ArgsProduct({{128, 512}, {0, 1}})
    ->ArgNames({"rows", "bf16"})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace draftgate::bench

BENCHMARK_MAIN();
