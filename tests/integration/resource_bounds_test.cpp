// Resource bounds on a 50 GB (sparse) checkpoint: `probe` and the structural checks (layer_path,
// fc_excludes_target_layer against a 1 GB sparse drafter) run in the torch-free front end, touch
// no tensor data and stay under 100 MB of RSS — they never load libtorch, whose libraries and
// static initialisers alone cost ~160 MB. A run that would need more memory than the machine has is
// refused up front with exit 2 instead of being killed.

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "draftgate/model/memory_budget.h"
#include "run_cli.h"
#include "synthetic_layouts.h"

extern char** environ;

namespace draftgate {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
using nlohmann::json;

struct Measured {
  int exit_code = -1;
  long max_rss_kib = 0;
  std::string err;
};

// Runs draftgate with `args` under peak_rss, returning its exit code, peak RSS and stderr.
Measured run_measured(const std::vector<std::string>& args, const fs::path& err_file) {
  const fs::path report = err_file.parent_path() / "peak_rss.txt";
  std::vector<std::string> all = {DRAFTGATE_PEAK_RSS, report.string(), DRAFTGATE_BINARY};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  pid_t pid = 0;
  Measured m;
  fs::remove(report);
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return m;
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::ifstream in_report(report);
  if (!(in_report >> m.exit_code >> m.max_rss_kib)) m.exit_code = -1, m.max_rss_kib = -1;
  std::ifstream in(err_file);
  std::getline(in, m.err, '\0');
  return m;
}

// Safetensors headers for bf16 tensors laid end to end; the data is one sparse hole.
class SparseSafetensors {
 public:
  void add(const std::string& name, const std::vector<std::int64_t>& shape) {
    std::uint64_t bytes = 2;
    for (auto d : shape) bytes *= static_cast<std::uint64_t>(d);
    header_[name] = {
        {"dtype", "BF16"}, {"shape", shape}, {"data_offsets", {offset_, offset_ + bytes}}};
    offset_ += bytes;
  }
  void write(const fs::path& file) const {
    std::string text = header_.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    {
      std::ofstream out(file, std::ios::binary);
      std::uint64_t n = text.size();
      for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
      out << text;
    }
    fs::resize_file(file, 8 + text.size() + offset_);
  }

 private:
  json header_ = json::object();
  std::uint64_t offset_ = 0;
};

constexpr std::int64_t kHidden = 8192, kHeads = 64, kKvHeads = 8, kHeadDim = 128;

// A Qwen3-shaped bf16 checkpoint of ~50 GB.
fs::path sparse_50gb_checkpoint() {
  const fs::path dir = testing::fresh_dir("sparse_50gb");
  const std::int64_t hidden = kHidden, inter = 29568, vocab = 151936, layers = 26;
  SparseSafetensors st;
  st.add("model.embed_tokens.weight", {vocab, hidden});
  st.add("lm_head.weight", {vocab, hidden});
  st.add("model.norm.weight", {hidden});
  for (std::int64_t l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    st.add(p + "input_layernorm.weight", {hidden});
    st.add(p + "post_attention_layernorm.weight", {hidden});
    st.add(p + "self_attn.q_proj.weight", {kHeads * kHeadDim, hidden});
    st.add(p + "self_attn.k_proj.weight", {kKvHeads * kHeadDim, hidden});
    st.add(p + "self_attn.v_proj.weight", {kKvHeads * kHeadDim, hidden});
    st.add(p + "self_attn.o_proj.weight", {hidden, kHeads * kHeadDim});
    st.add(p + "self_attn.q_norm.weight", {kHeadDim});
    st.add(p + "self_attn.k_norm.weight", {kHeadDim});
    st.add(p + "mlp.gate_proj.weight", {inter, hidden});
    st.add(p + "mlp.up_proj.weight", {inter, hidden});
    st.add(p + "mlp.down_proj.weight", {hidden, inter});
  }
  st.write(dir / "model.safetensors");
  std::ofstream(dir / "config.json") << json{
      {"model_type", "qwen3"},
      {"hidden_size", hidden},
      {"intermediate_size", inter},
      {"vocab_size", vocab},
      {"num_hidden_layers", layers},
      {"num_attention_heads", kHeads},
      {"num_key_value_heads", kKvHeads},
      {"head_dim", kHeadDim},
      {"rms_norm_eps", 1e-6},
      {"rope_theta", 1000000.0},
      {"tie_word_embeddings", false},
      {"max_position_embeddings", 40960}}.dump();
  return dir;
}

// A one-layer DFlash drafter for that target, tapping 5 of its 26 layers (~1 GB, sparse).
fs::path sparse_drafter() {
  const fs::path dir = testing::fresh_dir("sparse_drafter");
  const std::vector<std::int64_t> taps = {1, 7, 13, 19, 24};
  const std::int64_t inter = 4 * kHidden;
  SparseSafetensors st;
  st.add("fc.weight", {kHidden, static_cast<std::int64_t>(taps.size()) * kHidden});
  st.add("hidden_norm.weight", {kHidden});
  st.add("norm.weight", {kHidden});
  st.add("layers.0.input_layernorm.weight", {kHidden});
  st.add("layers.0.post_attention_layernorm.weight", {kHidden});
  st.add("layers.0.self_attn.q_proj.weight", {kHeads * kHeadDim, kHidden});
  st.add("layers.0.self_attn.k_proj.weight", {kKvHeads * kHeadDim, kHidden});
  st.add("layers.0.self_attn.v_proj.weight", {kKvHeads * kHeadDim, kHidden});
  st.add("layers.0.self_attn.o_proj.weight", {kHidden, kHeads * kHeadDim});
  st.add("layers.0.self_attn.q_norm.weight", {kHeadDim});
  st.add("layers.0.self_attn.k_norm.weight", {kHeadDim});
  st.add("layers.0.mlp.gate_proj.weight", {inter, kHidden});
  st.add("layers.0.mlp.up_proj.weight", {inter, kHidden});
  st.add("layers.0.mlp.down_proj.weight", {kHidden, inter});
  st.write(dir / "model.safetensors");
  std::ofstream(dir / "config.json")
      << json{{"model_type", "qwen3"},
              {"hidden_size", kHidden},
              {"intermediate_size", inter},
              {"num_hidden_layers", 1},
              {"num_attention_heads", kHeads},
              {"num_key_value_heads", kKvHeads},
              {"head_dim", kHeadDim},
              {"rope_theta", 1000000.0},
              {"num_target_layers", 26},
              {"dflash_config",
               {{"block_size", 16}, {"mask_token_id", 151669}, {"target_layer_ids", taps}}}}
             .dump();
  return dir;
}

TEST(ResourceBounds, ProbeAndTheStructuralChecksOfA50GbCheckpointStayUnder100Mb) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's shadow memory inflates RSS";
#endif
  const fs::path dir = sparse_50gb_checkpoint();
  ASSERT_GT(fs::file_size(dir / "model.safetensors"), 50ull * 1000 * 1000 * 1000);
  const Measured probe = run_measured({"probe", dir.string()}, dir / "err.txt");
  EXPECT_EQ(probe.exit_code, 0) << probe.err;
  EXPECT_GT(probe.max_rss_kib, 0) << "no peak RSS measured";
  EXPECT_LT(probe.max_rss_kib, 100 * 1024) << "probe peak RSS " << probe.max_rss_kib << " KiB";
  RecordProperty("probe_peak_rss_kib", std::to_string(probe.max_rss_kib));

  const fs::path drafter = sparse_drafter();
  const Measured check =
      run_measured({"check", "--only", "layer_path,fc_excludes_target_layer,drafter_config",
                    "--target", dir.string(), "--drafter", drafter.string()},
                   dir / "err.txt");
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_GT(check.max_rss_kib, 0) << "no peak RSS measured";
  EXPECT_LT(check.max_rss_kib, 100 * 1024) << "check peak RSS " << check.max_rss_kib << " KiB";
  RecordProperty("check_peak_rss_kib", std::to_string(check.max_rss_kib));

  // So does a suite that lists just those checks (CI's structural pre-flight).
  const fs::path suite = dir / "preflight.json";
  std::ofstream(suite) << json{{"schema", "draftgate.suite/1"},
                               {"name", "preflight"},
                               {"artifacts", {{"target", dir}, {"drafter", drafter}}},
                               {"checks",
                                {{{"check", "layer_path"}},
                                 {{"check", "fc_excludes_target_layer"}},
                                 {{"check", "drafter_config"}}}}}
                              .dump();
  const Measured preflight = run_measured({"check", "--suite", suite.string()}, dir / "err.txt");
  EXPECT_EQ(preflight.exit_code, 0) << preflight.err;
  EXPECT_GT(preflight.max_rss_kib, 0) << "no peak RSS measured";
  EXPECT_LT(preflight.max_rss_kib, 100 * 1024) << "suite peak RSS " << preflight.max_rss_kib;

  // The meter sees libtorch: a suite that adds a check that runs models goes to the engine (here
  // loss_type, which skips without a step record), and the engine alone is above that bound.
  std::ofstream(suite) << json{{"schema", "draftgate.suite/1"},
                               {"name", "with-a-model-check"},
                               {"artifacts", {{"target", dir}, {"drafter", drafter}}},
                               {"checks", {{{"check", "layer_path"}}, {{"check", "loss_type"}}}}}
                              .dump();
  const Measured engine = run_measured({"check", "--suite", suite.string()}, dir / "err.txt");
  EXPECT_EQ(engine.exit_code, 0) << engine.err;
  EXPECT_GT(engine.max_rss_kib, 100 * 1024);
  RecordProperty("engine_peak_rss_kib", std::to_string(engine.max_rss_kib));
}

TEST(ResourceBounds, ARunThatCannotFitIsRefusedUpFront) {
  const fs::path dir = sparse_50gb_checkpoint();
  // A float32 load converts the embedding (5.0 GB here; the bf16 linear weights and lm_head stay
  // as stored, mapped): under a 4 GiB budget that cannot fit. Decoding holds the whole model (a
  // single forward would stream it instead).
  ::setenv(model::kMemoryBudgetVariable, "4096", 1);
  const fs::path prompts = dir.parent_path() / "sparse_50gb_prompts.jsonl";
  std::ofstream(prompts) << R"({"id": "a", "input_ids": [1, 2, 3]})"
                         << "\n";
  const Measured m = run_measured({"eval", "--target", dir.string(), "--oracle", "--prompts",
                                   prompts.string(), "--dtype", "f32"},
                                  dir / "err.txt");
  ::unsetenv(model::kMemoryBudgetVariable);
  EXPECT_EQ(m.exit_code, 2) << m.err;
  EXPECT_THAT(m.err, HasSubstr("loading the weights as f32 needs "));
  EXPECT_THAT(m.err, HasSubstr("GiB of memory but"));
  EXPECT_THAT(m.err, HasSubstr("choose the stored dtype with --dtype bf16")) << "names the flag";
#if !defined(__SANITIZE_ADDRESS__)  // AddressSanitizer's shadow memory inflates RSS
  EXPECT_GT(m.max_rss_kib, 0) << "no peak RSS measured";
  EXPECT_LT(m.max_rss_kib, 200 * 1024) << "refused before allocating";
  RecordProperty("refused_run_peak_rss_kib", std::to_string(m.max_rss_kib));
#endif
}

// Peak RSS of `draftgate forward --dtype f32` over 64 tokens of a bf16 target of `layers` layers
// (hidden 512, MLP 2048: 7.6 MB of bf16 weights, 15 MB as f32, per layer), with the memory budget
// capped at `budget_mib` (empty: the machine's).
long forward_peak_rss_kib(std::int64_t layers, const std::string& budget_mib) {
  const fs::path dir = testing::fresh_dir("depth_" + std::to_string(layers));
  const auto made = testing::run_draftgate(
      "make-target --hidden 512 --intermediate 2048 --heads 8 --kv-heads 2 --head-dim 64 "
      "--vocab 512 --layers " +
      std::to_string(layers) + " --out " + (dir / "target").string());
  EXPECT_EQ(made.exit_code, 0) << made.err;
  std::string tokens = "1";
  for (int i = 2; i <= 64; ++i) tokens += "," + std::to_string(i);
  const auto m = testing::run_draftgate_measured(
      "forward --model " + (dir / "target").string() + " --dtype f32 --taps 0 --tokens " + tokens +
          " --out " + (dir / "dump.safetensors").string(),
      budget_mib.empty() ? ""
                         : "env " + std::string(model::kMemoryBudgetVariable) + "=" + budget_mib);
  EXPECT_EQ(m.exit_code, 0) << m.err;
  return m.peak_rss_kib;
}

TEST(ResourceBounds, StreamedForwardPeakRssDoesNotGrowWithDepth) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's shadow memory inflates RSS";
#endif
  constexpr long kLayerF32Kib = 15 * 1024, kLayerBf16Kib = 7 * 1024;
  // A 16 MiB budget: neither model fits, both stream.
  const long shallow = forward_peak_rss_kib(2, "16"), deep = forward_peak_rss_kib(12, "16");
  RecordProperty("streamed_2_layers_peak_rss_kib", std::to_string(shallow));
  RecordProperty("streamed_12_layers_peak_rss_kib", std::to_string(deep));
  EXPECT_LT(deep - shallow, 2 * kLayerF32Kib)
      << "streamed peak RSS " << shallow << " KiB at 2 layers, " << deep << " KiB at 12";
  // The meter sees depth: in memory, ten more layers cost most of their weights as read (the
  // linear weights stay bf16 in a float32 forward, mapped; the norms are float32 copies). Most, not
  // all: the blocks ATen's allocator keeps (model/big_block_cache.h: up to 64 MB of middle ones,
  // reused) move the heap's share of either peak by a few MB between runs (measured 71-75 MB for
  // the ten layers' ~76 MB); a meter blind to depth reads ~0.
  const long shallow_in_memory = forward_peak_rss_kib(2, ""),
             deep_in_memory = forward_peak_rss_kib(12, "");
  RecordProperty("in_memory_2_layers_peak_rss_kib", std::to_string(shallow_in_memory));
  RecordProperty("in_memory_12_layers_peak_rss_kib", std::to_string(deep_in_memory));
  EXPECT_GT(deep_in_memory - shallow_in_memory, 8 * kLayerBf16Kib)
      << "in-memory peak RSS " << shallow_in_memory << " KiB at 2 layers, " << deep_in_memory
      << " KiB at 12";
}

}  // namespace
}  // namespace draftgate
