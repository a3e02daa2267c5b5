#include "bench_models.h"

#include <cstdlib>
#include <stdexcept>

namespace draftgate::bench {
namespace fs = std::filesystem;
using model::Family;
using model::RandomTargetSpec;
using model::TargetLayout;

namespace {

fs::path root() {
  const char* env = std::getenv("DRAFTGATE_BENCH_MODELS");
  return fs::path(env != nullptr ? env : "bench-models");
}

RandomTargetSpec tiny(Family family) {
  RandomTargetSpec s;
  s.family = family;
  s.layout = family == Family::kQwen3 ? TargetLayout::kFlat : TargetLayout::kTextResave;
  return s;
}

RandomTargetSpec qwen3_0_6b() {  // Qwen3-0.6B shapes: 596M parameters
  RandomTargetSpec s;
  s.hidden = 1024, s.intermediate = 3072, s.layers = 28, s.heads = 16, s.kv_heads = 8,
  s.head_dim = 128;
  s.vocab = 151936, s.tied = true;
  return s;
}

RandomTargetSpec qwen3_5_0_8b() {  // Qwen3.5-0.8B shapes with the Qwen3 vocabulary: 622M parameters
  RandomTargetSpec s = qwen3_0_6b();
  s.family = Family::kQwen3_5, s.layout = TargetLayout::kTextResave;
  s.intermediate = 3584, s.layers = 24, s.heads = 8, s.kv_heads = 2, s.head_dim = 256;
  s.linear_k_heads = 16, s.linear_v_heads = 16, s.linear_k_dim = 128, s.linear_v_dim = 128;
  s.partial_rotary_factor = 0.25;
  return s;
}

RandomTargetSpec qwen3_8b() {  // Qwen3-8B shapes: 8.19B parameters
  RandomTargetSpec s;
  s.hidden = 4096, s.intermediate = 12288, s.layers = 36, s.heads = 32, s.kv_heads = 8,
  s.head_dim = 128;
  s.vocab = 151936;
  s.repeat_block = 1048573;  // prime, above every row length: generated while written
  return s;
}

// Drafters of their target's shapes: layers and taps as z-lab's (Qwen3-8B-DFlash-b16: 5 layers,
// taps 1, 9, 17, 25, 33; the small ones 2 layers).
struct DrafterShape {
  std::int64_t layers;
  std::vector<std::int64_t> taps;
};
const std::map<std::string, DrafterShape>& drafter_shapes() {
  static const std::map<std::string, DrafterShape> m = {{"qwen3-0.6b", {2, {1, 13, 25}}},
                                                        {"qwen3-8b", {5, {1, 9, 17, 25, 33}}}};
  return m;
}

}  // namespace

const std::map<std::string, RandomTargetSpec>& large_target_models() {
  static const std::map<std::string, RandomTargetSpec> m = {{"qwen3-8b", qwen3_8b()}};
  return m;
}

const std::map<std::string, RandomTargetSpec>& target_models() {
  static const std::map<std::string, RandomTargetSpec> m = {
      {"tiny-qwen3", tiny(Family::kQwen3)},
      {"tiny-qwen3_5", tiny(Family::kQwen3_5)},
      {"qwen3-0.6b", qwen3_0_6b()},
      {"qwen3_5-0.8b", qwen3_5_0_8b()}};
  return m;
}

const RandomTargetSpec& target_spec(const std::string& name) {
  const auto large = large_target_models().find(name);
  return large != large_target_models().end() ? large->second : target_models().at(name);
}

fs::path target_dir(const std::string& name) {
  const fs::path dir = root() / name;
  if (!fs::exists(dir / "model.safetensors")) model::write_random_target(dir, target_spec(name));
  return dir;
}

fs::path drafter_dir(const std::string& target) {
  const fs::path dir = root() / (target + "-drafter");
  if (fs::exists(dir / "model.safetensors")) return dir;
  model::RandomDrafterSpec d;
  d.block_size = 16;
  if (const auto shape = drafter_shapes().find(target); shape != drafter_shapes().end()) {
    const RandomTargetSpec& t = target_spec(target);
    d.target_hidden = t.hidden, d.target_layers = t.layers, d.vocab = t.vocab;
    d.intermediate = t.intermediate, d.heads = t.heads, d.kv_heads = t.kv_heads;
    d.head_dim = t.head_dim, d.mask_token_id = t.vocab - 1;
    d.layers = shape->second.layers, d.target_layer_ids = shape->second.taps;
  } else if (target != "tiny-qwen3_5") {
    throw std::invalid_argument("no benchmark drafter for " + target);
  }
  model::write_random_drafter(dir, d);
  return dir;
}

}  // namespace draftgate::bench
