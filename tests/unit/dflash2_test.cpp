// DFlash2 drafters (z-lab dflash/model.py @10129599): the config and tensor layout of the
// reference's fixtures, the grouped dynamic causal convolution against explicit sums, the
// candidate_selector's walk, greedy equivalence of speculative decoding and the DDTree refusal,
// and the training-mode forward (per-block convolutions) against inference.
// The float32 re-computation of whole decoding runs lives in tests/python/test_dflash2_naive.py.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "draftgate/decode/speculative.h"
#include "draftgate/model/dflash.h"
#include "draftgate/model/random_checkpoint.h"
#include "draftgate/model/tensor_view.h"
#include "error_text.h"
#include "test_files.h"

namespace draftgate::model {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

const fs::path kZLab = fs::path(DRAFTGATE_SOURCE_DIR) / "fixtures/real-layouts/zlab-dflash2";

nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(std::ifstream(p)); }

TEST(Dflash2Config, TheReferenceFixtureConfig) {
  const auto d = DrafterConfig::from(io::ModelConfig::load(kZLab / "config.json"));
  ASSERT_TRUE(d.dflash2);
  EXPECT_EQ(d.dflash2->conv_kernel_size, 2);
  EXPECT_EQ(d.dflash2->conv_group_size, 16);
  EXPECT_EQ(d.dflash2->selector_rank, 256);
  EXPECT_EQ(d.dflash2->selector_top_k, 16);
  EXPECT_DOUBLE_EQ(d.output_multiplier, 0.19611613513818404);
  EXPECT_EQ(d.final_logit_softcapping, 20.0);
  EXPECT_EQ(d.block_size, 16);
  EXPECT_EQ(d.mask_token_id, 201818);
  EXPECT_EQ(d.rope_theta, 500000.0);
  EXPECT_EQ(d.layer_causal, std::vector<bool>(5, false)) << "is_causal false: every layer";
}

nlohmann::json dflash2_config() {
  auto j = read_json(kZLab / "config.json");
  j["hidden_size"] = 64;
  return j;
}

DrafterConfig parse(const nlohmann::json& j) {
  return DrafterConfig::from(io::ModelConfig::from_json(j, "config.json"));
}

TEST(Dflash2Config, KeysAndArchitectureMustAgree) {
  auto j = dflash2_config();
  j["architectures"] = {"DFlashDraftModel"};
  EXPECT_EQ(
      error_of([&] { parse(j); }),
      "config.json: dflash_config.conv_kernel_size is a DFlash2 key but architectures does "
      "not name DFlash2DraftModel (hint: add \"DFlash2DraftModel\" to architectures or drop the "
      "DFlash2 keys)");
  j = dflash2_config();
  j["dflash_config"].erase("selector_top_k");
  EXPECT_EQ(error_of([&] { parse(j); }),
            "config.json: DFlash2DraftModel needs dflash_config.selector_top_k");
  j = dflash2_config();
  j["dflash_config"]["conv_group_size"] = 24;
  EXPECT_THAT(error_of([&] { parse(j); }),
              HasSubstr("conv_group_size 24 does not divide hidden_size 64"));
  j = dflash2_config();
  j["dflash_config"]["conv_kernel_size"] = 0;
  EXPECT_THAT(error_of([&] { parse(j); }),
              HasSubstr("dflash_config.conv_kernel_size must be positive, got 0"));
  j = dflash2_config();
  j["output_multiplier"] = 0.5;  // top level and dflash_config disagree
  EXPECT_THAT(error_of([&] { parse(j); }), HasSubstr("output_multiplier = 0.5 at the top level"));
  j = dflash2_config();
  j["dflash_config"]["final_logit_softcapping"] = 0;  // the reference: a cap of 0 is no cap
  EXPECT_FALSE(parse(j).final_logit_softcapping);
}

// out[n, t, c] = Σ_o (base[o, c] + dynamic[n, t, o, c / group]) · x[n, t − o, c], zero before
// each block's row 0: no block sees the one before it.
TEST(Dflash2Conv, EqualsTheExplicitSumPerBlockIncludingKernelsLongerThanTheRows) {
  const std::int64_t n = 2, t = 3, h = 8, group = 4;
  for (std::int64_t k : {1, 2, 5}) {
    const at::Tensor x = at::randn({n, t, h}, at::kDouble);
    const at::Tensor dynamic = at::randn({n, t, k, h / group}, at::kDouble);
    const at::Tensor base = at::randn({k, h}, at::kDouble);
    const at::Tensor got = grouped_dynamic_causal_conv(x, dynamic, base, group);
    for (std::int64_t block = 0; block < n; ++block)
      for (std::int64_t row = 0; row < t; ++row)
        for (std::int64_t c = 0; c < h; ++c) {
          double want = 0;
          for (std::int64_t o = 0; o < k && o <= row; ++o)
            want += (base[o][c].item<double>() + dynamic[block][row][o][c / group].item<double>()) *
                    x[block][row - o][c].item<double>();
          EXPECT_NEAR(got[block][row][c].item<double>(), want, 1e-12)
              << "k " << k << " block " << block << " row " << row;
        }
  }
}

struct Setup {
  fs::path dir;
  io::Checkpoint target_ckpt;
  std::unique_ptr<TargetModel> target;
};

// A float32 Qwen3 target with 6 layers (the reference's fixture taps five of them).
Setup& setup() {
  static std::unique_ptr<Setup> s;
  if (!s) {
    const auto dir = testing::fresh_dir("dflash2");
    RandomTargetSpec t;
    t.dtype = at::kFloat;
    t.layers = 6;
    write_random_target(dir / "target", t);
    auto ckpt = io::Checkpoint::open(dir / "target");
    s = std::make_unique<Setup>(Setup{dir, std::move(ckpt), nullptr});
    s->target = TargetModel::load(s->target_ckpt, {});
  }
  return *s;
}

// The reference fixture's checkpoint scaled down: every tensor name of its safetensors header,
// each dimension mapped to a small one, random values; the config scaled alike.
fs::path scaled_reference(const std::string& name, bool codebooks_with_weight_suffix = false) {
  const std::map<std::int64_t, std::int64_t> dim = {
      {6656, 64}, {33280, 320}, {19968, 128}, {202048, 256}, {256, 8},
      {1664, 16}, {1024, 32},   {4096, 64},   {128, 16},     {2, 2}};
  const auto header = read_json(kZLab / "dflash2-safetensors-header.json");
  io::NamedTensors tensors;
  for (const auto& [tensor, entry] : header.items()) {
    std::vector<std::int64_t> shape;
    for (auto d : entry["shape"]) shape.push_back(dim.at(d.get<std::int64_t>()));
    std::string stored = tensor;
    if (codebooks_with_weight_suffix && tensor.find("_codebook") != std::string::npos)
      stored += ".weight";
    tensors.emplace_back(stored, at::randn(shape, at::kFloat) * 0.3);
  }
  auto c = read_json(kZLab / "config.json");
  c["hidden_size"] = 64;
  c["intermediate_size"] = 128;
  c["num_attention_heads"] = 4;
  c["num_key_value_heads"] = 2;
  c["head_dim"] = 16;
  c["vocab_size"] = 256;
  c["num_target_layers"] = 6;
  c["sliding_window"] = 4;
  c["dflash_config"]["selector_rank"] = 8;
  c["dflash_config"]["block_size"] = 6;
  c["dflash_config"]["mask_token_id"] = 255;
  c["dflash_config"]["target_layer_ids"] = {0, 1, 2, 3, 4};
  const auto dir = setup().dir / name;
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << c.dump(2);
  io::write_tensors(dir / "model.safetensors", tensors, {{"format", "pt"}});
  return dir;
}

TEST(Dflash2Layout, TheReferenceTensorNamesLoadAndDraft) {
  const auto ckpt = io::Checkpoint::open(scaled_reference("reference"));
  const auto drafter = DFlashDrafter::load(ckpt, *setup().target);
  ASSERT_TRUE(drafter->is_dflash2());
  const ForwardResult r = setup().target->forward({3, 14, 15, 92, 65}, {0, 1, 2, 3, 4});
  DrafterState state = drafter->new_state();
  drafter->add_context(state, drafter->features(r, {0, 1, 2, 3, 4}));
  const BlockDraft draft = drafter->propose(state, 42);
  ASSERT_EQ(draft.logits.sizes().vec(), (std::vector<std::int64_t>{5, 256}));
  ASSERT_EQ(draft.tokens.size(), 5u);
  EXPECT_LE(draft.logits.abs().max().item<double>(), 20.0) << "soft-capped at 20";
  // Each token is one of its position's 16 best candidates, and the walk is not the argmax.
  const at::Tensor top = std::get<1>(at::topk(draft.logits, 16, -1));
  bool differs_from_argmax = false;
  for (std::int64_t p = 0; p < 5; ++p) {
    EXPECT_TRUE(top[p].eq(draft.tokens[p]).any().item<bool>()) << "position " << p;
    differs_from_argmax |= draft.logits[p].argmax().item<std::int64_t>() != draft.tokens[p];
  }
  EXPECT_TRUE(differs_from_argmax) << "the selector's pairwise scores never mattered";
  // Nothing of the block persists: the same step drafts the same tokens.
  EXPECT_EQ(drafter->propose(state, 42).tokens, draft.tokens);
  EXPECT_EQ(state.context, 5);
}

TEST(Dflash2Layout, CodebookNamesWithWeightSuffixAlsoLoadButNotBoth) {
  EXPECT_NO_THROW(DFlashDrafter::load(io::Checkpoint::open(scaled_reference("suffixed", true)),
                                      *setup().target));
  const auto dir = scaled_reference("both");
  auto tensors = io::NamedTensors{};
  const auto ckpt = io::Checkpoint::open(dir);
  for (const auto& n : ckpt.names()) tensors.emplace_back(n, io::load_tensor(ckpt, n).clone());
  tensors.emplace_back("candidate_selector.successor_codebook.weight", at::zeros({256, 8}));
  io::write_tensors(dir / "model.safetensors", tensors, {{"format", "pt"}});
  EXPECT_THAT(error_of([&] { DFlashDrafter::load(io::Checkpoint::open(dir), *setup().target); }),
              HasSubstr("both \"candidate_selector.successor_codebook\" and "
                        "\"candidate_selector.successor_codebook.weight\" are present"));
}

TEST(Dflash2Layout, MismatchesAreNamed) {
  const auto dir = scaled_reference("topk");
  auto c = read_json(dir / "config.json");
  c["dflash_config"]["selector_top_k"] = 300;
  std::ofstream(dir / "config.json") << c.dump(2);
  EXPECT_THAT(error_of([&] { DFlashDrafter::load(io::Checkpoint::open(dir), *setup().target); }),
              HasSubstr("selector_top_k 300 exceeds the target's vocabulary (256)"));
  c["dflash_config"]["selector_top_k"] = 16;
  c["dflash_config"]["conv_kernel_size"] = 3;
  std::ofstream(dir / "config.json") << c.dump(2);
  EXPECT_THAT(
      error_of([&] { DFlashDrafter::load(io::Checkpoint::open(dir), *setup().target); }),
      HasSubstr("tensor \"layers.0.attention_conv.base_kernel\" has shape [2, 2, 64], config "
                "implies [2, 3, 64]"));
}

fs::path random_dflash2(const std::string& name) {
  RandomDrafterSpec d;
  d.dtype = at::kFloat;
  d.target_layers = 6;
  d.dflash2 = Dflash2Config{2, 16, 8, 8};
  d.final_logit_softcapping = 10.0;
  const auto dir = setup().dir / name;
  write_random_drafter(dir, d);
  return dir;
}

TEST(Dflash2Decoding, SpeculativeOutputEqualsGreedyAndDdtreeIsRefused) {
  const auto ckpt = io::Checkpoint::open(random_dflash2("decoding"));
  const auto drafter = DFlashDrafter::load(ckpt, *setup().target);
  const auto block = decode::dflash_block_drafter(*drafter);
  decode::DecodeConfig config;
  config.max_new_tokens = 24;
  for (const std::vector<std::int64_t>& prompt :
       {std::vector<std::int64_t>{1, 2, 3}, std::vector<std::int64_t>{9, 200, 17, 4, 4}}) {
    const auto run = decode::speculative_generate(*setup().target, *block, prompt, config);
    EXPECT_EQ(run.output, decode::greedy_generate(*setup().target, prompt, 24));
    EXPECT_GT(run.drafted, 0);
  }
  config.tree_budget = 4;
  EXPECT_THAT(error_of([&] {
                decode::speculative_generate(*setup().target, *block, {1, 2}, config);
              }),
              HasSubstr("--tree-budget: DDTree is not defined for DFlash2 drafters"));
}

// A DFlash2 drafter whose layers are all full attention.
fs::path full_attention_dflash2(const std::string& name) {
  const auto dir = random_dflash2(name);
  auto c = read_json(dir / "config.json");
  c["layer_types"] = {"full_attention", "full_attention"};
  std::ofstream(dir / "config.json") << c.dump(2);
  return dir;
}

// The training pass batches every anchor's block; its convolutions must stay inside each block,
// so block j's rows equal a separate inference draft after the context before anchor j.
TEST(Dflash2Training, LogitsOfEveryAnchorEqualProposeAfterItsContext) {
  const auto drafter = DFlashDrafter::load(io::Checkpoint::open(full_attention_dflash2("training")),
                                           *setup().target);
  ASSERT_GT(drafter->config().dflash2->conv_kernel_size, 1);
  std::vector<std::int64_t> ids, all;
  for (std::int64_t i = 0; i < 20; ++i) {
    ids.push_back((i * 29 + 3) % 250);
    all.push_back(i);
  }
  const at::Tensor features =
      drafter->features(setup().target->forward(ids, drafter->config().target_layer_ids), all);
  const std::vector<std::int64_t> anchors = {0, 3, 7, 12, 13};  // 12 and 13: overlapping blocks
  const at::Tensor training = drafter->training_logits(features, ids, anchors);
  ASSERT_EQ(training.sizes().vec(), (std::vector<std::int64_t>{5, 8, 256}));
  for (std::size_t j = 0; j < anchors.size(); ++j) {
    DrafterState state = drafter->new_state();
    if (anchors[j] > 0) drafter->add_context(state, features.narrow(0, 0, anchors[j]));
    const at::Tensor inference = drafter->propose(state, ids[anchors[j]]).logits;
    EXPECT_LT((training[j].narrow(0, 1, 7) - inference).abs().max().item<double>(), 1e-5)
        << "anchor " << anchors[j];
  }
}

TEST(Dflash2Training, GradientsReachTheConvolutionKernels) {
  const auto drafter = DFlashDrafter::load(io::Checkpoint::open(full_attention_dflash2("grad")),
                                           *setup().target, /*autograd=*/true);
  for (const auto& [name, t] : drafter->parameters()) t.requires_grad_(true);
  const std::vector<std::int64_t> ids = {5, 17, 33, 2, 91, 60, 7, 12, 40, 3};
  std::vector<std::int64_t> all(ids.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
  const at::Tensor features =
      drafter->features(setup().target->forward(ids, drafter->config().target_layer_ids), all);
  drafter->training_logits(features, ids, {1, 4}).pow(2).mean().backward();
  for (const std::string conv : {"attention_conv.", "mlp_conv."})
    for (const std::string tensor : {"base_kernel", "kernel_projection.weight"}) {
      const at::Tensor grad = drafter->parameters().at("layers.0." + conv + tensor).grad();
      ASSERT_TRUE(grad.defined()) << conv << tensor;
      EXPECT_GT(grad.abs().sum().item<double>(), 0) << conv << tensor;
    }
}

// Sliding layers in training mode (the z-lab fixture's is_causal false: a two-sided window inside
// the block), with a window of 3 < the block size, and one reaching back into the context: each
// block equals propose() after its context; run as full attention, it does not.
TEST(Dflash2Training, SlidingLayersEqualProposeAndDifferRunAsFull) {
  for (const std::int64_t window : {3, 9}) {
    const auto dir = random_dflash2("sliding" + std::to_string(window));
    auto c = read_json(dir / "config.json");
    c["sliding_window"] = window;
    c["layer_types"] = {"sliding_attention", "full_attention"};
    c["use_sliding_window"] = true;
    std::ofstream(dir / "config.json") << c.dump(2);
    const auto drafter = DFlashDrafter::load(io::Checkpoint::open(dir), *setup().target);
    ASSERT_FALSE(drafter->config().layer_causal[0]);
    std::vector<std::int64_t> ids, all;
    for (std::int64_t i = 0; i < 20; ++i) {
      ids.push_back((i * 31 + 5) % 250);
      all.push_back(i);
    }
    const at::Tensor features =
        drafter->features(setup().target->forward(ids, drafter->config().target_layer_ids), all);
    const std::vector<std::int64_t> anchors = {0, 3, 12, 13};
    const at::Tensor training = drafter->training_logits(features, ids, anchors);
    const at::Tensor as_full = drafter->training_logits(
        features, ids, anchors, DFlashDrafter::ContextVisibility::kBeforeAnchor, {{0}});
    for (std::size_t j = 0; j < anchors.size(); ++j) {
      DrafterState state = drafter->new_state();
      if (anchors[j] > 0) drafter->add_context(state, features.narrow(0, 0, anchors[j]));
      const at::Tensor inference = drafter->propose(state, ids[anchors[j]]).logits;
      EXPECT_LT((training[j].narrow(0, 1, 7) - inference).abs().max().item<double>(), 1e-5)
          << "window " << window << " anchor " << anchors[j];
    }
    EXPECT_GT((as_full - training).abs().max().item<double>(), 1e-3) << "window " << window;
  }
}

}  // namespace
}  // namespace draftgate::model
