// Resource bounds on a 50 GB (sparse) checkpoint: `probe` (torch-free front end) stays under 100 MB
// of RSS; a structural check, which runs in the engine, adds less than 16 MB to what the engine
// costs before it reads anything (~160 MB: libtorch's libraries and static initialisers); neither
// touches tensor data. A run that would need more memory than the machine has is refused up front
// with exit 2 instead of being killed.

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "draftgate/model/memory_budget.h"
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
  std::vector<std::string> all = {DRAFTGATE_PEAK_RSS, DRAFTGATE_BINARY};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const fs::path out_file = err_file.parent_path() / "peak_rss.txt";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  pid_t pid = 0;
  Measured m;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return m;
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::ifstream(out_file) >> m.exit_code >> m.max_rss_kib;
  std::ifstream in(err_file);
  std::getline(in, m.err, '\0');
  return m;
}

// A Qwen3-shaped bf16 checkpoint of ~50 GB whose data is one sparse hole.
fs::path sparse_50gb_checkpoint() {
  const fs::path dir = testing::fresh_dir("sparse_50gb");
  const std::int64_t hidden = 8192, inter = 29568, vocab = 151936, layers = 26, heads = 64, kv = 8,
                     head_dim = 128;
  json header = json::object();
  std::uint64_t offset = 0;
  auto add = [&](const std::string& name, std::vector<std::int64_t> shape) {
    std::uint64_t bytes = 2;
    for (auto d : shape) bytes *= static_cast<std::uint64_t>(d);
    header[name] = {
        {"dtype", "BF16"}, {"shape", shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  };
  add("model.embed_tokens.weight", {vocab, hidden});
  add("lm_head.weight", {vocab, hidden});
  add("model.norm.weight", {hidden});
  for (std::int64_t l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {hidden});
    add(p + "post_attention_layernorm.weight", {hidden});
    add(p + "self_attn.q_proj.weight", {heads * head_dim, hidden});
    add(p + "self_attn.k_proj.weight", {kv * head_dim, hidden});
    add(p + "self_attn.v_proj.weight", {kv * head_dim, hidden});
    add(p + "self_attn.o_proj.weight", {hidden, heads * head_dim});
    add(p + "self_attn.q_norm.weight", {head_dim});
    add(p + "self_attn.k_norm.weight", {head_dim});
    add(p + "mlp.gate_proj.weight", {inter, hidden});
    add(p + "mlp.up_proj.weight", {inter, hidden});
    add(p + "mlp.down_proj.weight", {hidden, inter});
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  {
    std::ofstream out(dir / "model.safetensors", std::ios::binary);
    std::uint64_t n = text.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
    out << text;
  }
  fs::resize_file(dir / "model.safetensors", 8 + text.size() + offset);
  std::ofstream(dir / "config.json")
      << json{{"model_type", "qwen3"},        {"hidden_size", hidden},
              {"intermediate_size", inter},   {"vocab_size", vocab},
              {"num_hidden_layers", layers},  {"num_attention_heads", heads},
              {"num_key_value_heads", kv},    {"head_dim", head_dim},
              {"rms_norm_eps", 1e-6},         {"rope_theta", 1000000.0},
              {"tie_word_embeddings", false}, {"max_position_embeddings", 40960}}
             .dump();
  return dir;
}

TEST(ResourceBounds, ProbeAndAStructuralCheckOfA50GbCheckpointStayBounded) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's shadow memory inflates RSS";
#endif
  const fs::path dir = sparse_50gb_checkpoint();
  ASSERT_GT(fs::file_size(dir / "model.safetensors"), 50ull * 1000 * 1000 * 1000);
  const Measured probe = run_measured({"probe", dir.string()}, dir / "err.txt");
  EXPECT_EQ(probe.exit_code, 0) << probe.err;
  EXPECT_LT(probe.max_rss_kib, 100 * 1024) << "probe peak RSS " << probe.max_rss_kib << " KiB";

  const Measured engine = run_measured({"--version"}, dir / "err.txt");
  const Measured check =
      run_measured({"check", "--only", "layer_path", "--target", dir.string()}, dir / "err.txt");
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_LT(check.max_rss_kib - engine.max_rss_kib, 16 * 1024)
      << "check peak RSS " << check.max_rss_kib << " KiB, engine baseline " << engine.max_rss_kib;
}

TEST(ResourceBounds, ARunThatCannotFitIsRefusedUpFront) {
  const fs::path dir = sparse_50gb_checkpoint();
  const std::uint64_t needed = 2 * (fs::file_size(dir / "model.safetensors") - 1000000);
  if (needed <= model::available_memory_bytes())
    GTEST_SKIP() << "this machine has memory for 100 GB of f32 weights";
  const Measured m = run_measured({"forward", "--model", dir.string(), "--dtype", "f32", "--tokens",
                                   "1", "--out", (dir / "x.safetensors").string()},
                                  dir / "err.txt");
  EXPECT_EQ(m.exit_code, 2) << m.err;
  EXPECT_THAT(m.err, HasSubstr("loading the weights as f32 needs "));
  EXPECT_THAT(m.err, HasSubstr("GiB of memory but"));
#if !defined(__SANITIZE_ADDRESS__)  // AddressSanitizer's shadow memory inflates RSS
  EXPECT_LT(m.max_rss_kib, 200 * 1024) << "refused before allocating";
#endif
}

}  // namespace
}  // namespace draftgate
