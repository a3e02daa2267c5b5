// speculators DFlash drafters read natively: the config as vLLM reads it (taps = aux ids − 1,
// the nested layer config), and a reduced draft vocabulary's proposals against a brute-force
// argmax over the kept target ids of the z-lab twin's logits.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "checkpoint_edit.h"
#include "draftgate/arch/speculators_config.h"
#include "draftgate/io/json_util.h"
#include "draftgate/model/dflash.h"
#include "draftgate/model/tensor_view.h"
#include "error_text.h"
#include "fixture_paths.h"
#include "speculators_convert.h"
#include "test_files.h"

namespace draftgate::model {
namespace {

using testing::kTrained;

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

const fs::path kReference = kTrained / "qwen3-drafter-reference";
const fs::path kTarget = kTrained / "qwen3-target";

struct Target {
  io::Checkpoint ckpt;
  std::unique_ptr<TargetModel> model;
};
const Target& target() {
  static const Target* t = [] {
    auto* x = new Target{io::Checkpoint::open(kTarget), nullptr};
    x->model = TargetModel::load(x->ckpt, {});
    return x;
  }();
  return *t;
}

DrafterConfig config_of(const fs::path& dir) {
  return DrafterConfig::from(io::ModelConfig::load(dir / "config.json"));
}

TEST(SpeculatorsConfig, ReadAsVllmReadsItIntoTheZLabTwinsConfig) {
  const fs::path dir = testing::fresh_dir("speculators_config") / "spec";
  testing::write_speculators_drafter(kReference, kTarget, dir);
  const json written = io::read_json_file(dir / "config.json");
  ASSERT_EQ(written["aux_hidden_state_layer_ids"], json::parse("[1, 3]"));  // z-lab [0, 2] + 1
  const DrafterConfig s = config_of(dir), z = config_of(kReference);
  EXPECT_EQ(s.format, DrafterFormat::kSpeculators);
  EXPECT_EQ(z.format, DrafterFormat::kZLab);
  EXPECT_EQ(s.target_layer_ids, z.target_layer_ids);
  EXPECT_EQ(s.taps_as_written, (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(z.taps_as_written, z.target_layer_ids);
  EXPECT_EQ(s.block_size, z.block_size);
  EXPECT_EQ(s.mask_token_id, z.mask_token_id);
  EXPECT_EQ(s.hidden, z.hidden);
  EXPECT_EQ(s.num_layers, z.num_layers);
  EXPECT_EQ(s.head_dim, z.head_dim);
  EXPECT_EQ(s.rope_theta, z.rope_theta);
  EXPECT_EQ(s.layer_causal, z.layer_causal);
  EXPECT_EQ(s.draft_vocab_size, 64);
  EXPECT_FALSE(z.draft_vocab_size);

  // vLLM gathers the aux hidden states in layer order whatever the list's order, so the same taps
  // listed backwards are the same drafter (z-lab's list order would swap fc's inputs).
  json backwards = written;
  backwards["aux_hidden_state_layer_ids"] = {3, 1};
  const fs::path reversed = dir.parent_path() / "spec_backwards";
  fs::create_directories(reversed);
  testing::write_file(reversed / "config.json", backwards.dump());
  EXPECT_EQ(DrafterConfig::from(io::ModelConfig::load(reversed / "config.json")).target_layer_ids,
            z.target_layer_ids);
}

TEST(SpeculatorsConfig, TheShiftAndTheLayerConfigAreValidated) {
  const fs::path dir = testing::fresh_dir("speculators_config_bad") / "spec";
  testing::write_speculators_drafter(kReference, kTarget, dir);
  const json good = io::read_json_file(dir / "config.json");
  auto error_with = [&](const std::function<void(json&)>& edit) {
    json j = good;
    edit(j);
    return testing::error_of(
        [&] { DrafterConfig::from(io::ModelConfig::from_json(j, "spec/config.json")); });
  };
  EXPECT_THAT(error_with([](json& j) {
                j["aux_hidden_state_layer_ids"] = {0, 3};
              }),
              HasSubstr("speculators id 0 is the embedding output"));
  EXPECT_THAT(error_with([](json& j) { j.erase("aux_hidden_state_layer_ids"); }),
              HasSubstr("missing aux_hidden_state_layer_ids"));
  EXPECT_THAT(error_with([](json& j) { j.erase("mask_token_id"); }),
              HasSubstr("missing mask_token_id"));
  EXPECT_THAT(error_with([](json& j) { j["transformer_layer_config"]["block_size"] = 8; }),
              HasSubstr("refused transformer_layer_config.block_size = 8: a z-lab key inside"));
  EXPECT_THAT(error_with([](json& j) { j["sample_from_anchor"] = true; }),
              HasSubstr("refused sample_from_anchor = true"));
  EXPECT_THAT(error_with([](json& j) {
                j["speculators_config"]["proposal_methods"][0]["speculative_tokens"] = 3;
              }),
              HasSubstr("refused speculators_config"));
  // sliding_window_non_causal: inert without sliding layers, refused with one.
  json sliding = good;
  sliding["sliding_window_non_causal"] = true;
  EXPECT_NO_THROW(DrafterConfig::from(io::ModelConfig::from_json(sliding, "c.json")));
  sliding["transformer_layer_config"]["layer_types"] = {"sliding_attention", "full_attention"};
  sliding["transformer_layer_config"]["sliding_window"] = 4;
  sliding["transformer_layer_config"]["use_sliding_window"] = true;
  EXPECT_THAT(testing::error_of(
                  [&] { DrafterConfig::from(io::ModelConfig::from_json(sliding, "c.json")); }),
              HasSubstr("refused sliding_window_non_causal = true"));
  sliding["sliding_window_non_causal"] = false;  // the engines' rule: sliding causal, full not
  EXPECT_EQ(DrafterConfig::from(io::ModelConfig::from_json(sliding, "c.json")).layer_causal,
            (std::vector<bool>{true, false}));
}

// One draft block of `drafter` after the context `tokens`, anchored on `anchor`.
BlockDraft propose_after(const DFlashDrafter& drafter, const std::vector<std::int64_t>& tokens,
                         std::int64_t anchor) {
  const ForwardResult r = target().model->forward(tokens, {0, 2});
  std::vector<std::int64_t> rows(tokens.size());
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::int64_t>(i);
  DrafterState state = drafter.new_state();
  drafter.add_context(state, drafter.features(r, rows));
  return drafter.propose(state, anchor);
}

const std::vector<std::int64_t> kContext = {3, 14, 15, 9, 26, 5, 35, 8, 9, 7};
constexpr std::int64_t kAnchor = 42;

// The brute force: per row, the kept target id with the largest z-lab logit (the first in target
// id order on a tie), from a plain loop over the kept ids.
std::vector<std::int64_t> best_kept(const at::Tensor& full, const std::vector<std::int64_t>& kept) {
  std::vector<std::int64_t> out;
  const at::Tensor f = full.to(at::kDouble).contiguous();
  for (std::int64_t row = 0; row < f.size(0); ++row) {
    std::int64_t best = kept.front();
    for (auto id : kept)
      if (f[row][id].item<double>() > f[row][best].item<double>()) best = id;
    out.push_back(best);
  }
  return out;
}

struct Reduced {
  fs::path dir;
  std::vector<std::int64_t> kept;  // ascending
  at::Tensor full_logits;          // the z-lab twin's
};

// A reduced vocabulary that leaves out every id the z-lab twin drafts, so no proposal can come
// out right without the mapping: the rest, minus a few scattered ids.
const Reduced& reduced() {
  static const Reduced* r = [] {
    auto* x = new Reduced;
    const auto zlab = DFlashDrafter::load(io::Checkpoint::open(kReference), *target().model);
    const BlockDraft z = propose_after(*zlab, kContext, kAnchor);
    x->full_logits = z.logits;
    for (std::int64_t id = 0; id < 64; ++id)
      if (std::find(z.tokens.begin(), z.tokens.end(), id) == z.tokens.end() && id % 7 != 3)
        x->kept.push_back(id);
    x->dir = testing::fresh_dir("speculators_reduced") / "spec";
    testing::write_speculators_drafter(kReference, kTarget, x->dir, x->kept);
    return x;
  }();
  return *r;
}

TEST(SpeculatorsDrafter, ReducedVocabularyProposesTheBestKeptTargetId) {
  const Reduced& r = reduced();
  ASSERT_LT(r.kept.size(), 60u);
  const auto ckpt = io::Checkpoint::open(r.dir);
  const auto drafter = DFlashDrafter::load(ckpt, *target().model);
  const BlockDraft d = propose_after(*drafter, kContext, kAnchor);
  const std::vector<std::int64_t> expected = best_kept(r.full_logits, r.kept);
  EXPECT_EQ(d.tokens, expected);
  // Logits on target ids: -inf off the kept ids, the z-lab twin's (to float32 rounding of a
  // smaller GEMM) on them.
  ASSERT_EQ(d.logits.sizes().vec(), r.full_logits.sizes().vec());
  const at::Tensor kept = at::tensor(r.kept, at::kLong);
  at::Tensor off = at::ones({64}, at::kBool);
  off.index_fill_(0, kept, false);
  EXPECT_TRUE(at::isneginf(d.logits.index_select(1, off.nonzero().squeeze(1))).all().item<bool>());
  const at::Tensor on = d.logits.index_select(1, kept), ref = r.full_logits.index_select(1, kept);
  EXPECT_LT((on - ref).abs().max().item<double>(), 1e-5 * ref.abs().max().item<double>());
  // The comparison means something: each row's best kept id wins by more than that rounding.
  for (std::int64_t row = 0; row < ref.size(0); ++row) {
    const auto top = ref[row].topk(2);
    EXPECT_GT((std::get<0>(top)[0] - std::get<0>(top)[1]).item<double>(), 1e-4) << row;
  }
}

TEST(SpeculatorsDrafter, AWrongD2tIsCaughtByTheBruteForce) {
  const Reduced& r = reduced();
  const fs::path dir = testing::fresh_dir("speculators_wrong_d2t") / "spec";
  fs::copy(r.dir, dir, fs::copy_options::recursive);
  // Swap the target ids of row 0's best kept id and its neighbour: t2d stays consistent, the
  // head rows now land on each other's ids.
  const std::int64_t best = best_kept(r.full_logits, r.kept)[0];
  const auto i = std::find(r.kept.begin(), r.kept.end(), best) - r.kept.begin();
  const auto j = i + 1 < static_cast<std::ptrdiff_t>(r.kept.size()) ? i + 1 : i - 1;
  testing::edit_tensor(dir, "d2t", [&](at::Tensor d2t) {
    d2t[i] = r.kept[j] - i;
    d2t[j] = r.kept[i] - j;
    return d2t;
  });
  const auto ckpt = io::Checkpoint::open(dir);
  const auto drafter = DFlashDrafter::load(ckpt, *target().model);
  const BlockDraft d = propose_after(*drafter, kContext, kAnchor);
  EXPECT_NE(d.tokens[0], best);
  EXPECT_EQ(d.tokens[0], r.kept[j]);
  EXPECT_NE(d.tokens, best_kept(r.full_logits, r.kept));
}

}  // namespace
}  // namespace draftgate::model
