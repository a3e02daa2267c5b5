// The DFlash drafter: config parsing (real SpecForge configs), validation against the target, and
// inference semantics against a naive float64 recomputation without cache.

#include "draftgate/model/dflash.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>

#include "checkpoint_edit.h"
#include "checks/metrics.h"
#include "draftgate/model/argmax_rows.h"
#include "draftgate/model/ops.h"
#include "draftgate/model/random_checkpoint.h"
#include "draftgate/model/tensor_view.h"
#include "error_text.h"
#include "fixture_paths.h"
#include "synthetic_layouts.h"

namespace draftgate::model {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

const fs::path kSpecForge =
    fs::path(DRAFTGATE_SOURCE_DIR) / "fixtures/real-layouts/specforge-dflash";

DrafterConfig parse(const nlohmann::json& j) {
  return DrafterConfig::from(io::ModelConfig::from_json(j, "config.json"));
}

TEST(DrafterConfig, RealSpecForgeConfigs) {
  const auto q3 = DrafterConfig::from(io::ModelConfig::load(kSpecForge / "qwen3-8b-dflash.json"));
  EXPECT_EQ(q3.block_size, 16);
  EXPECT_EQ(q3.mask_token_id, 151669);
  EXPECT_EQ(q3.target_layer_ids, (std::vector<std::int64_t>{1, 9, 17, 25, 33}));
  EXPECT_EQ(q3.num_target_layers, 36);
  const auto q36 =
      DrafterConfig::from(io::ModelConfig::load(kSpecForge / "qwen3.6-27b-dflash.json"));
  EXPECT_EQ(q36.target_layer_ids, (std::vector<std::int64_t>{1, 16, 31, 46, 61}));
  EXPECT_EQ(q36.layer_types,
            (std::vector<std::string>{"sliding_attention", "sliding_attention", "sliding_attention",
                                      "sliding_attention", "full_attention"}));
  EXPECT_EQ(q36.sliding_window, 2048);
  EXPECT_EQ(q36.mask_token_id, 248070);
  for (const char* f : {"qwen3.5-4b-dflash.json", "qwen3.5-35b-a3b-dflash.json",
                        "qwen3-4b-dflash.json", "qwen2.5-0.5b-dflash.json",
                        "longcat-flash-dflash.json", "lfm2.5-1.2b-instruct-dflash.json"})
    EXPECT_NO_THROW(DrafterConfig::from(io::ModelConfig::load(kSpecForge / f))) << f;
}

nlohmann::json minimal() {
  return {{"hidden_size", 64},
          {"intermediate_size", 128},
          {"num_hidden_layers", 1},
          {"num_attention_heads", 4},
          {"head_dim", 16},
          {"rope_theta", 1e6},
          {"block_size", 8},
          {"dflash_config", {{"mask_token_id", 5}, {"target_layer_ids", {0, 2}}}}};
}

TEST(DrafterConfig, FieldsInEitherPlaceMustAgree) {
  auto j = minimal();
  j["dflash_config"]["block_size"] = 8;
  EXPECT_EQ(parse(j).block_size, 8);
  j["dflash_config"]["block_size"] = 16;
  EXPECT_THAT(error_of([&] { parse(j); }),
              HasSubstr("block_size = 8 at the top level but 16 under dflash_config"));
  j = minimal();
  j["dflash_config"].erase("target_layer_ids");
  EXPECT_THAT(error_of([&] { parse(j); }),
              HasSubstr("config.json: missing dflash_config.target_layer_ids"));
  j = minimal();
  j.erase("block_size");
  EXPECT_THAT(error_of([&] { parse(j); }), HasSubstr("missing block_size"));
  j = minimal();
  j["dflash_config"].erase("mask_token_id");
  EXPECT_THAT(error_of([&] { parse(j); }), HasSubstr("missing mask_token_id"));
}

// The causality rule as a literal table (z-lab dflash/model.py @10129599 and vLLM qwen3_dflash.py
// `_dflash_layer_causal`, read by hand): is_causal absent / null / true / false ×
// dflash_config.causal absent / true / false, for a [sliding, full] drafter; expected causality of
// each layer under z-lab's and vLLM's readings.
TEST(DrafterCausality, RuleTable) {
  struct Row {
    const char* is_causal;  // "absent" or the JSON value
    const char* dflash_causal;
    std::vector<bool> zlab, vllm;  // [sliding layer, full layer]
  };
  const std::vector<Row> table = {
      {"absent", "absent", {true, false}, {true, false}},
      {"absent", "true", {true, false}, {true, true}},
      {"absent", "false", {true, false}, {false, false}},
      {"null", "absent", {true, false}, {true, false}},
      {"null", "true", {true, false}, {true, true}},
      {"null", "false", {true, false}, {false, false}},
      {"true", "absent", {true, true}, {true, true}},
      {"true", "true", {true, true}, {true, true}},
      {"true", "false", {true, true}, {true, true}},
      {"false", "absent", {false, false}, {false, false}},
      {"false", "true", {false, false}, {false, false}},
      {"false", "false", {false, false}, {false, false}},
  };
  for (const Row& row : table) {
    auto j = minimal();
    j["num_hidden_layers"] = 2;
    j["layer_types"] = {"sliding_attention", "full_attention"};
    j["sliding_window"] = 4;
    j["use_sliding_window"] = true;
    if (std::string(row.is_causal) != "absent")
      j["is_causal"] = nlohmann::json::parse(row.is_causal);
    if (std::string(row.dflash_causal) != "absent")
      j["dflash_config"]["causal"] = nlohmann::json::parse(row.dflash_causal);
    const auto c = io::ModelConfig::from_json(j, "config.json");
    const std::string where =
        std::string("is_causal ") + row.is_causal + ", dflash_config.causal " + row.dflash_causal;
    EXPECT_EQ(DrafterConfig::from(c).layer_causal, row.zlab) << where;
    EXPECT_EQ(DrafterConfig::from(c, CausalityReading::kVllm).layer_causal, row.vllm) << where;
    EXPECT_EQ(DrafterConfig::from(c).causality.readings_disagree(), row.zlab != row.vllm) << where;
  }
  auto j = minimal();  // no layer_types: every layer full, non-causal
  EXPECT_EQ(parse(j).layer_causal, std::vector<bool>{false});
  j["is_causal"] = "yes";
  EXPECT_THAT(error_of([&] { parse(j); }), HasSubstr("is_causal must be true, false or null"));
}

TEST(DrafterConfig, RopeFromEitherLayoutAndInputEmbeddingScale) {
  auto j = minimal();
  j.erase("rope_theta");
  j["rope_parameters"] = {{"rope_theta", 1e7}, {"rope_type", "default"}};
  EXPECT_EQ(parse(j).rope_theta, 1e7);
  j["rope_theta"] = 1e5;
  EXPECT_THAT(error_of([&] { parse(j); }),
              HasSubstr("rope_theta = 100000 but rope_parameters.rope_theta = 1e+07"));
  j.erase("rope_theta");
  j["rope_parameters"]["rope_type"] = "yarn";
  EXPECT_THAT(error_of([&] { parse(j); }),
              HasSubstr("drafter rope type \"yarn\" is not supported"));
  j.erase("rope_parameters");
  EXPECT_THAT(error_of([&] { parse(j); }), HasSubstr("missing rope_theta"));

  j = minimal();
  EXPECT_EQ(parse(j).input_embedding_scale, 1.0);
  j["dflash_config"]["input_embedding_scale"] = 0.5;
  EXPECT_EQ(parse(j).input_embedding_scale, 0.5);
  j["input_embedding_scale"] = 2.0;
  EXPECT_THAT(error_of([&] { parse(j); }),
              HasSubstr("input_embedding_scale = 2 at the top level but 0.5 under dflash_config"));
}

struct Pair {
  fs::path dir;
  io::Checkpoint target_ckpt;
  std::unique_ptr<TargetModel> target;
};

Pair& pair() {
  static std::unique_ptr<Pair> p;
  if (!p) {
    const auto dir = testing::fresh_dir("dflash_pair");
    RandomTargetSpec t;
    t.dtype = at::kFloat;
    write_random_target(dir / "target", t);
    auto ckpt = io::Checkpoint::open(dir / "target");
    p = std::make_unique<Pair>(Pair{dir, std::move(ckpt), nullptr});
    p->target = TargetModel::load(p->target_ckpt, {});
  }
  return *p;
}

fs::path drafter_with(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
  const auto dir = pair().dir / name;
  RandomDrafterSpec d;
  d.dtype = at::kFloat;
  write_random_drafter(dir, d);
  auto j = nlohmann::json::parse(std::ifstream(dir / "config.json"));
  edit(j);
  std::ofstream(dir / "config.json") << j.dump();
  return dir;
}

std::string load_error(const fs::path& dir) {
  return error_of([&] { DFlashDrafter::load(io::Checkpoint::open(dir), *pair().target); });
}

TEST(DrafterValidation, MismatchesWithTheTargetAreNamed) {
  EXPECT_THAT(load_error(drafter_with("hidden", [](auto& j) { j["hidden_size"] = 32; })),
              HasSubstr("drafter hidden_size 32 != target hidden_size 64"));
  EXPECT_THAT(load_error(drafter_with("taps",
                                      [](auto& j) {
                                        j["dflash_config"]["target_layer_ids"] = {0, 4};
                                      })),
              HasSubstr("tap 4 is not a target layer (0..3)"));
  EXPECT_THAT(
      load_error(drafter_with("mask", [](auto& j) { j["dflash_config"]["mask_token_id"] = 256; })),
      HasSubstr("mask_token_id 256 is outside the target's embedding (vocab 256)"));
  EXPECT_THAT(load_error(drafter_with("vocab", [](auto& j) { j["vocab_size"] = 300; })),
              HasSubstr("drafter vocab_size 300 != target vocab_size 256"));
  EXPECT_THAT(load_error(drafter_with("layers", [](auto& j) { j["num_target_layers"] = 36; })),
              HasSubstr("num_target_layers 36 but the target has 4 layers"));
  EXPECT_THAT(load_error(drafter_with("fc",
                                      [](auto& j) {
                                        j["dflash_config"]["target_layer_ids"] = {0, 1, 2};
                                      })),
              HasSubstr("tensor \"fc.weight\" has shape [64, 128], config implies [64, 192]"));
}

// A z-lab drafter's own lm_head: vLLM uses it, z-lab's reference the target's, so it must hold the
// target's values — compared as stored, whatever dtype the target runs in (a float32 run keeps
// the bf16 head as stored).
TEST(DrafterValidation, AZLabDraftersOwnHeadMustBeTheTargets) {
  const fs::path dir = testing::fresh_dir("dflash_own_head");
  RandomTargetSpec bf16;
  bf16.dtype = at::kBFloat16;
  write_random_target(dir / "target", bf16);
  write_random_drafter(dir / "drafter", RandomDrafterSpec{});
  const auto target_ckpt = io::Checkpoint::open(dir / "target");
  TargetOptions f32;
  f32.dtype = at::kFloat;
  const auto target = TargetModel::load(target_ckpt, f32);
  const fs::path drafter = dir / "drafter";
  const auto with_head = [&](const at::Tensor& head) {
    testing::edit_tensors(drafter, [&](io::NamedTensors& tensors) {
      tensors.erase(std::remove_if(tensors.begin(), tensors.end(),
                                   [](const auto& t) { return t.first == "lm_head.weight"; }),
                    tensors.end());
      tensors.emplace_back("lm_head.weight", head);
    });
  };
  const at::Tensor head = target->lm_head_weight().to(at::kCPU).clone();
  with_head(head);
  EXPECT_NO_THROW(DFlashDrafter::load(io::Checkpoint::open(drafter), *target));
  at::Tensor other = head.clone();
  other[3][5] = other[3][5].item<float>() + 1;
  with_head(other);
  EXPECT_THAT(error_of([&] { DFlashDrafter::load(io::Checkpoint::open(drafter), *target); }),
              HasSubstr("the drafter's own lm_head.weight differs from the target's"));
}

// Straightforward float64 recomputation of one draft call: all context and block K/V from scratch,
// no cache.
// z-lab's `_attention_mask` element by element: query i of the block sits at key index s + i
// (keys: context 0..s-1, then the block); causal hides later keys; a window w hides keys w or
// more behind and, when not causal, w or more ahead. The causality and window of each layer are
// decided here from the raw config keys, not by DrafterConfig.
bool naive_visible(std::int64_t s, std::int64_t i, std::int64_t key, bool causal,
                   std::optional<std::int64_t> window) {
  const std::int64_t query = s + i;
  bool visible = true;
  if (causal) visible = visible && key <= query;
  if (window) {
    visible = visible && query - key < *window;
    if (!causal) visible = visible && key - query < *window;
  }
  return visible;
}

struct NaiveLayerAttention {
  bool causal;
  std::optional<std::int64_t> window;
};

std::vector<NaiveLayerAttention> naive_layer_attention(const nlohmann::json& config) {
  std::vector<NaiveLayerAttention> out;
  const auto n = config["num_hidden_layers"].get<std::int64_t>();
  for (std::int64_t l = 0; l < n; ++l) {
    const bool sliding =
        config.contains("layer_types") && config["layer_types"][l] == "sliding_attention";
    const bool causal = config.contains("is_causal") && !config["is_causal"].is_null()
                            ? config["is_causal"].get<bool>()
                            : sliding;
    out.push_back(
        {causal, sliding ? std::optional<std::int64_t>(config["sliding_window"].get<std::int64_t>())
                         : std::nullopt});
  }
  return out;
}

TEST(BlockVisibility, MatchesTheReferenceMaskElementByElement) {
  const std::int64_t b = 8;
  for (std::int64_t s : {0, 3, 10})
    for (std::optional<std::int64_t> window :
         {std::optional<std::int64_t>(), std::optional<std::int64_t>(3),
          std::optional<std::int64_t>(5), std::optional<std::int64_t>(40)})
      for (bool causal : {false, true}) {
        at::Tensor engine = block_visibility(s, b, causal, window, at::kCPU);
        if (engine.size(1) == b)  // the short form: context always visible
          engine = at::cat({at::ones({b, s}, at::kBool), engine}, 1);
        ASSERT_EQ(engine.sizes().vec(), (std::vector<std::int64_t>{b, s + b}));
        for (std::int64_t i = 0; i < b; ++i)
          for (std::int64_t k = 0; k < s + b; ++k)
            EXPECT_EQ(engine[i][k].item<bool>(), naive_visible(s, i, k, causal, window))
                << "s " << s << " window " << window.value_or(-1) << " causal " << causal
                << " query " << i << " key " << k;
      }
}

at::Tensor naive_draft(const io::Checkpoint& ckpt, const TargetModel& target,
                       const at::Tensor& features, std::int64_t anchor) {
  auto w = [&](const std::string& n) { return io::load_tensor(ckpt, n).to(at::kDouble); };
  const auto cfg = DrafterConfig::from(ckpt.config());
  const auto attention = naive_layer_attention(ckpt.config().root());
  const double embedding_scale =
      ckpt.config().root()["dflash_config"].value("input_embedding_scale", 1.0);
  auto rms = [&](const at::Tensor& x, const at::Tensor& g) {
    return x * at::rsqrt((x * x).mean(-1, true) + cfg.rms_eps) * g;
  };
  auto rope = [&](const at::Tensor& x, std::int64_t first) {  // x [T, heads, D], positions first..
    const std::int64_t d = x.size(-1), half = d / 2;
    at::Tensor out = x.clone();
    for (std::int64_t t = 0; t < x.size(0); ++t)
      for (std::int64_t j = 0; j < half; ++j) {
        const double angle =
            static_cast<double>(first + t) * std::pow(cfg.rope_theta, -2.0 * j / d);
        out[t].select(-1, j).copy_(x[t].select(-1, j) * std::cos(angle) -
                                   x[t].select(-1, j + half) * std::sin(angle));
        out[t]
            .select(-1, j + half)
            .copy_(x[t].select(-1, j + half) * std::cos(angle) +
                   x[t].select(-1, j) * std::sin(angle));
      }
    return out;
  };
  const std::int64_t s = features.size(0), b = cfg.block_size, nh = cfg.num_heads,
                     nkv = cfg.num_kv_heads, d = cfg.head_dim;
  const at::Tensor ctx =
      rms(at::matmul(features.to(at::kDouble), w("fc.weight").t()), w("hidden_norm.weight"));
  std::vector<std::int64_t> ids(b, cfg.mask_token_id);
  ids[0] = anchor;
  at::Tensor h =
      target.embed_weight().to(at::kDouble).index_select(0, at::tensor(ids)) * embedding_scale;
  for (std::int64_t l = 0; l < cfg.num_layers; ++l) {
    at::Tensor hidden = at::zeros({b, s + b}, at::kDouble);  // -inf where the query does not see
    for (std::int64_t i = 0; i < b; ++i)
      for (std::int64_t key = 0; key < s + b; ++key)
        if (!naive_visible(s, i, key, attention[l].causal, attention[l].window))
          hidden[i][key] = -INFINITY;
    const std::string p = "layers." + std::to_string(l) + ".";
    const at::Tensor u = rms(h, w(p + "input_layernorm.weight"));
    const at::Tensor kv_in = at::cat({ctx, u}, 0);
    at::Tensor q = rms(at::matmul(u, w(p + "self_attn.q_proj.weight").t()).view({b, nh, d}),
                       w(p + "self_attn.q_norm.weight"));
    at::Tensor k =
        rms(at::matmul(kv_in, w(p + "self_attn.k_proj.weight").t()).view({s + b, nkv, d}),
            w(p + "self_attn.k_norm.weight"));
    const at::Tensor v =
        at::matmul(kv_in, w(p + "self_attn.v_proj.weight").t()).view({s + b, nkv, d});
    q = rope(q, s);
    k = rope(k, 0);
    at::Tensor out = at::zeros({b, nh * d}, at::kDouble);
    for (std::int64_t head = 0; head < nh; ++head) {
      const std::int64_t g = head / (nh / nkv);
      const at::Tensor scores =
          at::matmul(q.select(1, head), k.select(1, g).t()) / std::sqrt(static_cast<double>(d)) +
          hidden;
      out.narrow(1, head * d, d).copy_(at::matmul(at::softmax(scores, -1), v.select(1, g)));
    }
    h = h + at::matmul(out, w(p + "self_attn.o_proj.weight").t());
    const at::Tensor m = rms(h, w(p + "post_attention_layernorm.weight"));
    const at::Tensor gate = at::matmul(m, w(p + "mlp.gate_proj.weight").t());
    h = h + at::matmul(gate * at::sigmoid(gate) * at::matmul(m, w(p + "mlp.up_proj.weight").t()),
                       w(p + "mlp.down_proj.weight").t());
  }
  return at::matmul(rms(h.narrow(0, 1, b - 1), w("norm.weight")),
                    target.lm_head_weight().to(at::kDouble).t());
}

TEST(DrafterInference, MatchesNaiveRecomputationAndKeepsOnlyContext) {
  const auto dir = drafter_with("semantics", [](auto&) {});
  const auto ckpt = io::Checkpoint::open(dir);
  const auto drafter = DFlashDrafter::load(ckpt, *pair().target);
  std::vector<std::int64_t> tokens = {3, 14, 15, 92, 65, 35, 89};
  const ForwardResult r = pair().target->forward(tokens, {0, 2});
  DrafterState state = drafter->new_state();
  drafter->add_context(
      state, drafter->features(r, {0, 1, 2}));  // context arrives in pieces, as in decoding
  drafter->add_context(state, drafter->features(r, {3, 4, 5, 6}));
  EXPECT_EQ(state.context, 7);
  const at::Tensor logits = drafter->draft(state, 42);
  ASSERT_EQ(logits.sizes().vec(), (std::vector<std::int64_t>{7, 256}));
  const at::Tensor all = drafter->features(r, {0, 1, 2, 3, 4, 5, 6});
  const at::Tensor ref = naive_draft(ckpt, *pair().target, all, 42);
  EXPECT_LT(checks::metrics::max_rel_diff(logits, ref), 1e-5);
  EXPECT_EQ(state.context, 7);
  EXPECT_TRUE(at::equal(drafter->draft(state, 42), logits)) << "the block's K/V must not persist";
}

// The loop's tokens-only block: a bf16 drafter's picks come out of the lm_head product itself
// (dense_argmax), the same as propose()'s argmax of its logits; the block leaves only context.
TEST(DrafterInference, TokensAloneAreTheProposedTokens) {
  const auto dir = testing::fresh_dir("dflash_bf16_pair");
  RandomTargetSpec t;
  t.dtype = at::kBFloat16;
  t.vocab = 1000;  // more than one of the products' chunks of rows
  write_random_target(dir / "target", t);
  RandomDrafterSpec d;
  d.vocab = t.vocab;
  d.mask_token_id = t.vocab - 1;
  write_random_drafter(dir / "drafter", d);
  const auto target_ckpt = io::Checkpoint::open(dir / "target");
  const auto target = TargetModel::load(target_ckpt, {});
  const auto ckpt = io::Checkpoint::open(dir / "drafter");
  const auto drafter = DFlashDrafter::load(ckpt, *target);
  const std::vector<std::int64_t> tokens = {3, 14, 15, 92, 65, 35, 89};
  const ForwardResult r = target->forward(tokens, drafter->config().target_layer_ids);
  DrafterState state = drafter->new_state();
  drafter->add_context(state, drafter->features(r, {0, 1, 2, 3, 4, 5, 6}));
  for (std::int64_t rows : {0, 2, 5}) {
    const BlockDraft draft = drafter->propose(state, 42, rows);
    EXPECT_EQ(draft.tokens, argmax_rows(draft.logits)) << rows << " rows";
    EXPECT_EQ(drafter->propose_tokens(state, 42, rows), draft.tokens) << rows << " rows";
  }
  EXPECT_EQ(state.context, 7);
}

// Sliding and full layers under each causality setting, with a window shorter than the block (so
// the two-sided window of a non-causal sliding layer matters) and an input embedding scale: the
// engine's draft logits equal the naive recomputation's, and the settings really change them.
TEST(DrafterInference, EveryCausalitySettingMatchesTheNaiveMasks) {
  std::vector<at::Tensor> results;
  for (const char* is_causal : {"absent", "true", "false"}) {
    const auto dir = drafter_with(std::string("causal_") + is_causal, [&](nlohmann::json& j) {
      j["layer_types"] = {"sliding_attention", "full_attention"};
      j["sliding_window"] = 3;
      j["use_sliding_window"] = true;
      j["dflash_config"]["input_embedding_scale"] = 1.5;
      if (std::string(is_causal) != "absent") j["is_causal"] = nlohmann::json::parse(is_causal);
    });
    const auto ckpt = io::Checkpoint::open(dir);
    const auto drafter = DFlashDrafter::load(ckpt, *pair().target);
    std::vector<std::int64_t> tokens = {3, 14, 15, 92, 65, 35, 89};
    const ForwardResult r = pair().target->forward(tokens, {0, 2});
    DrafterState state = drafter->new_state();
    drafter->add_context(state, drafter->features(r, {0, 1, 2, 3}));
    drafter->add_context(state, drafter->features(r, {4, 5, 6}));
    const at::Tensor logits = drafter->draft(state, 42);
    const at::Tensor ref =
        naive_draft(ckpt, *pair().target, drafter->features(r, {0, 1, 2, 3, 4, 5, 6}), 42);
    EXPECT_LT(checks::metrics::max_rel_diff(logits, ref), 1e-5) << "is_causal " << is_causal;
    results.push_back(logits);
  }
  EXPECT_FALSE(at::allclose(results[0], results[1])) << "full layer: causal vs not";
  EXPECT_FALSE(at::allclose(results[0], results[2])) << "sliding layer: causal vs not";
}

}  // namespace
}  // namespace draftgate::model
