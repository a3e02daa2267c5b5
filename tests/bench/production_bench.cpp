// Production-shape benchmark (issues 13, 28, 30): the three target-side step-record checks —
// loss_type, target_logits_noise_free and fc_excludes_target_layer with its dynamic half — run by
// `draftgate check` with its defaults, as a user would, on targets with the real text shapes of
// Qwen3.6-27B (bf16, 53.8 GB; and its FP8 release, block-FP8 decoder linears) and Qwen3.6-35B-A3B
// (bf16, 256 fused experts per layer), with the wall time, peak RSS, CPU time and bytes read of
// that process (from the peak_rss launcher) and the bounds of this machine: the FLOPs of one
// float32 forward at the measured GEMM throughput (of a MoE target, the k experts each position
// runs), and the checkpoint's bytes at the measured cold read rate.
//
// The target is a random checkpoint written with a repeated block (RandomTargetSpec::repeat_block:
// each tensor a window of one random sequence, so every row of every matrix is distinct and the
// activations finite and varied; writing it takes disk time only). The drafter is a random
// 1-layer one with the DFlash taps of the shape's released drafter. The step record is made as a
// trainer makes one: a float32 forward of the target over the sequence gives fc_input (the taps)
// and the teacher logits, labels are the teacher's greedy tokens, the drafter logits half the
// teacher's plus noise (a drafter in training: loss_type recomputes the loss from the recorded
// logits, it does not run the drafter) and the logged loss their CE. The buggy record adds noise
// of 0.05 of the teacher's RMS to the teacher logits (the recipe's fc-input noise put on the
// teacher path).
//
// Files (28–69 GB a shape): under $DRAFTGATE_PRODUCTION_DIR, kept for the next run when set;
// otherwise in a fresh directory under the working directory, deleted when the benchmark ends.
// Before every `check` the checkpoint is dropped from the page cache, so each run reads it cold.
// Shapes 0 / 1 / 2 = 27B bf16 / 35B-A3B bf16 / 27B FP8; run one at a time where disk is short:
//
//   nice -n 5 build/production_bench --benchmark_filter='StepRecordChecks/shape:1/positions:128'

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
#include <thread>
#include <vector>

#include "draftgate/io/checkpoint.h"
#include "draftgate/io/direct_read.h"
#include "draftgate/io/safetensors.h"
#include "draftgate/model/ops.h"
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

// Qwen3.6-27B-FP8 as released: the same shapes, the decoder linears block-FP8 in 128 x 128 blocks.
model::RandomTargetSpec qwen36_27b_fp8() {
  model::RandomTargetSpec s = qwen36_27b();
  s.fp8 = model::random_target_fp8_scheme(s, 128, 128);
  return s;
}

// The text decoder of Qwen3.6-35B-A3B (Qwen3_5MoeTextConfig): 40 hybrid layers, 256 experts of
// width 512, top 8, a shared expert of 512, the experts stored fused as the release holds them.
model::RandomTargetSpec qwen36_35b_a3b() {
  model::RandomTargetSpec s = qwen36_27b();
  s.family = model::Family::kQwen3_5Moe;
  s.hidden = 2048, s.layers = 40, s.heads = 16, s.kv_heads = 2;
  s.linear_v_heads = 32;
  s.num_experts = 256, s.experts_per_token = 8, s.moe_intermediate = 512;
  s.shared_expert_intermediate = 512, s.mlp_only_layers = {}, s.fused_experts = true;
  return s;
}

// A production shape: the target, the taps of its DFlash drafter (qwen3.6-27b-dflash.json,
// SpecForge's qwen3.5-35b-a3b-dflash.json).
struct Shape {
  const char* name;
  model::RandomTargetSpec target;
  std::vector<std::int64_t> taps;
};
const std::vector<Shape>& shapes() {
  static const std::vector<Shape> all = {
      {"qwen36-27b-bf16", qwen36_27b(), {1, 16, 31, 46, 61}},
      {"qwen36-35b-a3b-bf16", qwen36_35b_a3b(), {1, 10, 19, 28, 37}},
      {"qwen36-27b-fp8", qwen36_27b_fp8(), {1, 16, 31, 46, 61}},
  };
  return all;
}
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

fs::path target_dir(const Shape& shape) {
  const fs::path d = work() / shape.name;
  if (!fs::exists(d / "model.safetensors")) {
    const auto start = Clock::now();
    model::write_random_target(d, shape.target);
    const double s = seconds_since(start);
    std::cerr << "wrote " << d << ": " << fs::file_size(d / "model.safetensors") / 1e9 << " GB in "
              << s << " s\n";
  }
  return d;
}

fs::path drafter_dir(const Shape& shape) {
  const fs::path d = work() / (std::string(shape.name) + "-drafter");
  if (!fs::exists(d / "model.safetensors")) {
    const model::RandomTargetSpec& t = shape.target;
    model::RandomDrafterSpec s;
    s.target_hidden = t.hidden, s.target_layers = t.layers, s.vocab = t.vocab;
    s.intermediate = 1024, s.layers = 1, s.heads = 8, s.kv_heads = 2, s.head_dim = 128;
    s.block_size = kBlock, s.mask_token_id = t.vocab - 1, s.target_layer_ids = shape.taps;
    model::write_random_drafter(d, s);
  }
  return d;
}

struct Records {
  fs::path reference, noisy;
};

// `record` again, declaring that its fc_input was computed in float32 (as the bench computes it):
// a record declared f32 throughout asks for the float32 forward alone, one left undeclared for
// the bf16 forward of the precision models too (Engine::plan_record_forwards).
fs::path declared_f32(const fs::path& record) {
  const fs::path out = record.parent_path() / (record.stem().string() + "-hidden-f32.safetensors");
  if (fs::exists(out)) return out;
  train::StepRecord rec = train::read_step_record(record);
  rec.hidden_dtype = train::ComputePrecision::kF32;
  train::write_step_record(out, rec);
  return out;
}

// A trainer's step over `positions` tokens, and the same step with noise on the teacher.
Records records(const Shape& shape, std::int64_t positions) {
  const std::string stem = std::string(shape.name) + "-record-" + std::to_string(positions);
  const Records r{work() / (stem + ".safetensors"), work() / (stem + "-noisy.safetensors")};
  if (fs::exists(r.reference) && fs::exists(r.noisy)) return r;
  const auto vocab = shape.target.vocab;
  train::StepRecord rec;
  for (std::int64_t i = 0; i < positions; ++i) rec.input_ids.push_back((i * 104729 + 17) % vocab);
  const std::int64_t prompt = 16;
  rec.loss_mask.assign(positions, 1);
  for (std::int64_t i = 0; i < prompt; ++i) rec.loss_mask[i] = 0;
  for (std::int64_t a = prompt; a + kBlock <= positions; a += kBlock) rec.anchors.push_back(a);
  rec.block_size = kBlock, rec.gamma = 7.0, rec.mask_token_id = vocab - 1;
  rec.target_layer_ids = shape.taps, rec.loss = train::LossType::kHardCrossEntropy, rec.step = 1;
  rec.teacher_dtype = rec.drafter_dtype = train::ComputePrecision::kF32;

  const auto start = Clock::now();
  const io::Checkpoint ckpt = io::Checkpoint::open(target_dir(shape));
  model::TargetOptions options;
  options.dtype = at::kFloat;
  const auto target = model::open_sequence_target(ckpt, options, model::TargetPath::kStreamed);
  const model::ForwardResult fwd = target->forward(rec.input_ids, shape.taps);
  std::cerr << "recorded a " << positions << "-position step in " << seconds_since(start) << " s\n";
  std::vector<at::Tensor> taps;
  for (auto t : shape.taps) taps.push_back(fwd.taps.at(t));
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
// multiply-add (attention scores and the GDN recurrence add under 1 % at these lengths); of the
// routed experts (a fused [experts, out, in] tensor, or mlp.experts.<e>.*) the k of E each
// position runs.
double forward_flops(const io::Checkpoint& ckpt, const model::RandomTargetSpec& spec,
                     std::int64_t positions) {
  double params = 0;
  const double routed = static_cast<double>(spec.experts_per_token) / spec.num_experts;
  for (const auto& name : ckpt.names()) {
    const io::TensorInfo* info = ckpt.info(name);
    const bool expert = name.find(".mlp.experts.") != std::string::npos;
    if (info->shape.size() == 3 && expert) params += routed * static_cast<double>(info->numel());
    if (info->shape.size() == 2 && name.find("embed_tokens") == std::string::npos &&
        name.find("_scale_inv") == std::string::npos)
      params += (expert ? routed : 1.0) * static_cast<double>(info->numel());
  }
  return 2.0 * static_cast<double>(positions) * params;
}

// GEMM throughput at the target's largest dense shape: [positions, hidden] x [hidden, width]
// (the MLP; for a MoE target the gated query projection, its experts being narrower).
double gemm_flops_per_s(const model::RandomTargetSpec& s, std::int64_t positions,
                        at::ScalarType dtype, int repeats = 3) {
  const std::int64_t width =
      s.family == model::Family::kQwen3_5Moe ? 2 * s.heads * s.head_dim : s.intermediate;
  const at::Tensor x = at::randn({positions, s.hidden}).to(dtype);
  const at::Tensor w = at::randn({width, s.hidden}).to(dtype);
  at::matmul(x, w.t());
  const auto start = Clock::now();
  for (int i = 0; i < repeats; ++i) benchmark::DoNotOptimize(at::matmul(x, w.t()));
  return 2.0 * positions * s.hidden * width * repeats / seconds_since(start);
}

// The rate of the checks' own product at the same shape: dense() of a float32 x and the bf16 weight
// (AMX tiles, AVX-512 FMAs or the widened OpenBLAS GEMM, as this CPU runs the forward).
double dense_flops_per_s(const model::RandomTargetSpec& s, std::int64_t positions) {
  const at::Tensor x = at::randn({positions, s.hidden});
  const at::Tensor w = (at::randn({s.intermediate, s.hidden}) / 64).to(at::kBFloat16);
  model::dense(x, w);
  const auto start = Clock::now();
  for (int i = 0; i < 3; ++i) benchmark::DoNotOptimize(model::dense(x, w));
  return 2.0 * positions * s.hidden * s.intermediate * 3 / seconds_since(start);
}

// Cold sequential read rate of the checkpoint: `bytes` from its middle after eviction.
double cold_read_bytes_per_s(const fs::path& file, std::uint64_t bytes) {
  // As a streamed walk reads a layer: direct reads (io/direct_read.h), 1 GB at a time, from the
  // middle of the file. The rate of plain buffered reads of this disk is not the bound of a run
  // that does not read that way (measured here: 0.5 GB/s buffered where the run read 1.4).
  evict(file);
  constexpr std::uint64_t kPiece = std::uint64_t{1} << 30;
  char* buffer = static_cast<char*>(std::aligned_alloc(io::kDirectReadAlignment, kPiece));
  const std::uint64_t size = fs::file_size(file);
  std::uint64_t at = size / 2 / io::kDirectReadAlignment * io::kDirectReadAlignment, done = 0;
  const auto start = Clock::now();
  while (done < bytes && at + kPiece <= size) {
    io::read_direct(file, {{at, kPiece, kPiece, buffer}});
    done += kPiece, at += kPiece;
  }
  const double rate = static_cast<double>(done) / seconds_since(start);
  std::free(buffer);
  evict(file);
  return rate;
}

struct Measured {
  int exit_code = -1;
  double wall_s = 0, peak_rss_kib = 0, user_s = 0, system_s = 0, read_bytes = 0;
  nlohmann::json report;
};

// `draftgate check` on a record, under the peak_rss launcher, the checkpoint cold.
Measured run_checks(const Shape& shape, const fs::path& record) {
  const fs::path target = target_dir(shape);
  evict(target / "model.safetensors");
  const fs::path rss = work() / "peak_rss.txt", report = work() / "report.json";
  fs::remove(report);
  const std::string cmd = std::string(DRAFTGATE_PEAK_RSS) + " " + rss.string() + " " +
                          DRAFTGATE_BINARY + " check --target " + target.string() + " --drafter " +
                          drafter_dir(shape).string() + " --step-record " + record.string() +
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
// on the buggy one (target_logits_noise_free alone must fail), on production shape `shape`; with
// hidden_f32 = 1 the record declares its fc_input's precision, so the run computes the float32
// forward alone. flop_bound_s is the bound: one float32 forward at the float32 GEMM rate
// measured beside it (OpenBLAS on the weight widened beforehand); flop_bound_run_s adds the bf16
// forward where the run computes it, at the bf16 GEMM rate measured beside it (oneDNN).
void BM_StepRecordChecks(benchmark::State& state) {
  const Shape& shape = shapes().at(static_cast<std::size_t>(state.range(0)));
  const std::int64_t positions = state.range(1);
  const bool noisy = state.range(2) != 0, hidden_f32 = state.range(3) != 0;
  const fs::path target = target_dir(shape);
  drafter_dir(shape);
  const Records recs = records(shape, positions);
  const fs::path record = hidden_f32 ? declared_f32(noisy ? recs.noisy : recs.reference)
                                     : (noisy ? recs.noisy : recs.reference);
  const io::Checkpoint ckpt = io::Checkpoint::open(target);
  const double bytes = static_cast<double>(fs::file_size(target / "model.safetensors"));
  const double flops = forward_flops(ckpt, shape.target, positions);
  const double gemm = gemm_flops_per_s(shape.target, positions, at::kFloat);
  const double bf16_gemm =
      hidden_f32 ? 0 : gemm_flops_per_s(shape.target, positions, at::kBFloat16);
  const double dense_rate = dense_flops_per_s(shape.target, positions);
  const double read_rate = cold_read_bytes_per_s(target / "model.safetensors", 4ull << 30);
  const double load_before = load_average();
  Measured m;
  for (auto _ : state) {
    m = run_checks(shape, record);
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
  const double run_flop_bound = flop_bound + (hidden_f32 ? 0 : flops / bf16_gemm);
  state.counters["wall_s"] = m.wall_s;
  state.counters["peak_rss_GB"] = m.peak_rss_kib * 1024 / 1e9;
  state.counters["cpu_s"] = m.user_s + m.system_s;
  state.counters["sys_s"] = m.system_s;
  state.counters["cpu_busy"] = (m.user_s + m.system_s) / (m.wall_s * at::get_num_threads());
  state.counters["read_GB"] = m.read_bytes / 1e9;
  state.counters["weights_GB"] = bytes / 1e9;
  state.counters["forward_TFLOP"] = flops / 1e12;
  state.counters["gemm_GFLOPs"] = gemm / 1e9;
  state.counters["dense_GFLOPs"] = dense_rate / 1e9;
  state.counters["read_GBps"] = read_rate / 1e9;
  state.counters["flop_bound_s"] = flop_bound;
  if (!hidden_f32) state.counters["bf16_gemm_GFLOPs"] = bf16_gemm / 1e9;
  state.counters["flop_bound_run_s"] = run_flop_bound;
  state.counters["wall_per_run_bound"] = m.wall_s / std::max(run_flop_bound, io_bound);
  state.counters["io_bound_s"] = io_bound;
  state.counters["wall_per_bound"] = m.wall_s / std::max(flop_bound, io_bound);
  state.counters["load_before"] = load_before;
  state.counters["load_after"] = load_average();
  state.SetLabel(std::string(shape.name) + ": " + v);
}
BENCHMARK(BM_StepRecordChecks)
    ->ArgsProduct({{0, 1, 2}, {128, 512}, {0, 1}, {0, 1}})
    ->ArgNames({"shape", "positions", "noisy", "hidden_f32"})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

// The GEMM throughput the FLOP bounds use (float32, the stored bf16) and the checks' own product.
void BM_Gemm(benchmark::State& state) {
  const std::int64_t rows = state.range(0);
  double rate = 0;
  for (auto _ : state)
    rate = state.range(1) == 2 ? dense_flops_per_s(qwen36_27b(), rows)
                               : gemm_flops_per_s(qwen36_27b(), rows,
                                                  state.range(1) ? at::kBFloat16 : at::kFloat, 1);
  state.counters["GFLOPs"] = rate / 1e9;
  state.counters["threads"] = at::get_num_threads();
}
BENCHMARK(BM_Gemm)
    ->ArgsProduct({{128, 512}, {0, 1, 2}})
    ->ArgNames({"rows", "product"})  // 0 float32, 1 bf16, 2 dense(float32 x, bf16 weight)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace draftgate::bench

// On every core, as `draftgate` runs (its front end sets the threads; ATen's own default here is
// one): the record's forward and the GEMM rates of the bounds, oneDNN's bf16 included.
int main(int argc, char** argv) {
  at::set_num_threads(static_cast<int>(std::thread::hardware_concurrency()));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
