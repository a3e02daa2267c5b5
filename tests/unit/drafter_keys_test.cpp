// The drafter key table: the bundled and published drafters read with no refused key; every key
// that would change the computation unseen is refused by the reader (one line: key, value,
// effect); the engines' attention keys (use_swa, swa_window_size) read as vLLM's
// `_resolve_layer_attention` table says, against expectations written out by hand.

#include "draftgate/arch/drafter_keys.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "draftgate/arch/drafter.h"
#include "error_text.h"
#include "fixture_paths.h"

namespace draftgate::model {
namespace {

using testing::kSourceDir;

using testing::error_of;
using ::testing::HasSubstr;
namespace fs = std::filesystem;
using nlohmann::json;

json load(const fs::path& p) { return json::parse(std::ifstream(p)); }
io::ModelConfig cfg(const json& j) { return io::ModelConfig::from_json(j, "config.json"); }

// The bundled reference drafter: every key implemented or inert.
json reference() {
  return load(kSourceDir / "fixtures/trained/qwen3-drafter-reference/config.json");
}

TEST(DrafterKeys, BundledAndPublishedDraftersHaveNoRefusedKey) {
  std::vector<fs::path> configs;
  for (const auto& e : fs::directory_iterator(kSourceDir / "fixtures/trained"))
    if (e.path().filename().string().find("drafter") != std::string::npos)
      configs.push_back(e.path() / "config.json");
  for (const auto& e :
       fs::directory_iterator(kSourceDir / "fixtures/real-layouts/specforge-dflash"))
    configs.push_back(e.path());
  configs.push_back(kSourceDir / "fixtures/real-layouts/zlab-dflash2/config.json");
  ASSERT_GE(configs.size(), 14u);
  for (const auto& p : configs) {
    const auto c = io::ModelConfig::load(p);
    EXPECT_EQ(detect_drafter_format(c), DrafterFormat::kZLab) << p;
    const auto refused = refused_keys(c);
    EXPECT_TRUE(refused.empty()) << p << ": " << (refused.empty() ? "" : refused[0].line());
    EXPECT_NO_THROW(DrafterConfig::from(c)) << p;
    for (const auto& f : key_facts(c)) EXPECT_NE(f.status, KeyStatus::kRefused) << p << f.key;
  }
}

struct Refusal {
  const char* name;
  void (*edit)(json&);
  const char* line;  // expected in the reader's one-line error
};

// `r`'s edit of `base` is the one refused key, named with its value and effect, and the reader's
// refusal is that one line.
void expect_one_refusal(json base, const Refusal& r) {
  r.edit(base);
  const auto c = cfg(base);
  const auto refused = refused_keys(c);
  ASSERT_EQ(refused.size(), 1u) << r.name;
  EXPECT_THAT(refused[0].line(), HasSubstr(r.line)) << r.name;
  const std::string err = error_of([&] { DrafterConfig::from(c); });
  EXPECT_THAT(err, HasSubstr(std::string("config.json: refused ") + r.line)) << r.name;
  EXPECT_EQ(err.find('\n'), std::string::npos) << r.name;
}

// Each value that changes the computation in a way draftgate does not run.
const Refusal kRefusals[] = {
    {"projector_gru", [](json& j) { j["dflash_config"]["projector_type"] = "gru"; },
     "dflash_config.projector_type = \"gru\": selects SpecForge's Domino (GRU) or DSpark"},
    {"projector_domino", [](json& j) { j["dflash_config"]["projector_type"] = "domino"; },
     "dflash_config.projector_type = \"domino\""},
    {"sample_from_anchor", [](json& j) { j["dflash_config"]["sample_from_anchor"] = true; },
     "dflash_config.sample_from_anchor = true: drafts block_size tokens from the anchor"},
    {"pure_draft_prefix_len", [](json& j) { j["dflash_config"]["pure_draft_prefix_len"] = 1; },
     "dflash_config.pure_draft_prefix_len = 1: sets where the Domino GRU correction starts"},
    {"shift_label", [](json& j) { j["dflash_config"]["shift_label"] = true; },
     "dflash_config.shift_label = true: feeds the Domino head"},
    {"gru_hidden_dim", [](json& j) { j["dflash_config"]["gru_hidden_dim"] = 1024; },
     "dflash_config.gru_hidden_dim = 1024: unknown to draftgate"},
    {"attention_sink_bias", [](json& j) { j["dflash_config"]["attention_sink_bias"] = true; },
     "dflash_config.attention_sink_bias = true: adds vLLM's per-head attention sink bias"},
    {"use_aux_hidden_state", [](json& j) { j["dflash_config"]["use_aux_hidden_state"] = false; },
     "dflash_config.use_aux_hidden_state = false"},
    {"unknown_top_level", [](json& j) { j["emb_dim"] = 256; },
     "emb_dim = 256: unknown to draftgate"},
    {"architecture_domino", [](json& j) { j["architectures"] = {"DominoDraftModel"}; },
     "architectures = [\"DominoDraftModel\"]: names another drafter class"},
    {"model_type_llama", [](json& j) { j["model_type"] = "llama"; },
     "model_type = \"llama\": the drafter layers would be another family's"},
    {"hidden_act_gelu", [](json& j) { j["hidden_act"] = "gelu"; },
     "hidden_act = \"gelu\": changes the MLP activation"},
    {"attention_bias", [](json& j) { j["attention_bias"] = true; },
     "attention_bias = true: adds biases to q/k/v/o_proj"},
    {"use_sliding_window_without_types", [](json& j) { j["use_sliding_window"] = true; },
     "use_sliding_window = true: makes transformers derive or drop sliding layers"},
    {"use_sliding_window_false_with_sliding",
     [](json& j) {
       j["layer_types"] = {"sliding_attention", "full_attention"};
       j["sliding_window"] = 4;
       j["use_sliding_window"] = false;
     },
     "use_sliding_window = false"},
    // Absent or null it is Qwen3Config's false: transformers drops the window (z-lab's reference
    // then runs no window, vLLM refuses the config).
    {"use_sliding_window_absent_with_sliding",
     [](json& j) {
       j["layer_types"] = {"sliding_attention", "full_attention"};
       j["sliding_window"] = 4;
     },
     "use_sliding_window: absent while layer_types holds sliding layers"},
    {"use_sliding_window_null_with_sliding",
     [](json& j) {
       j["layer_types"] = {"sliding_attention", "full_attention"};
       j["sliding_window"] = 4;
       j["use_sliding_window"] = nullptr;
     },
     "use_sliding_window = null"},
    {"is_neox_style", [](json& j) { j["is_neox_style"] = false; },
     "is_neox_style = false: switches vLLM to interleaved RoPE"},
    {"logit_scale", [](json& j) { j["logit_scale"] = 2.0; }, "logit_scale = 2.0"},
    {"draft_vocab_size", [](json& j) { j["draft_vocab_size"] = 32; },
     "draft_vocab_size = 32: a reduced draft vocabulary"},
    {"target_hidden_size", [](json& j) { j["target_hidden_size"] = 128; },
     "target_hidden_size = 128"},
    {"eagle_config",
     [](json& j) {
       j["eagle_config"] = {{"use_aux_hidden_state", false}};
     },
     "eagle_config = {\"use_aux_hidden_state\": false}"},
    {"rope_parameters_factor",
     [](json& j) {
       j["rope_parameters"] = {{"rope_theta", 1e6}, {"factor", 4.0}};
     },
     "rope_parameters.factor = 4.0: unknown to draftgate"},
};

// The reference drafter in the speculators layout (convert/dflash/converter.py @c05b95b3
// _build_config): the z-lab-only keys out of the layer config, taps + 1 at the top level.
json speculators_reference() {
  json layer = reference();
  const json dflash = layer["dflash_config"];
  const json block = layer["block_size"];
  for (const char* k : {"architectures", "block_size", "dflash_config", "num_target_layers"})
    layer.erase(k);
  return {{"speculators_model_type", "dflash"},
          {"architectures", {"DFlashSpeculator"}},
          {"transformer_layer_config", layer},
          {"draft_vocab_size", 64},
          {"block_size", block},
          {"aux_hidden_state_layer_ids", {1, 3}},
          {"mask_token_id", dflash["mask_token_id"]},
          {"sliding_window_non_causal", false},
          {"sample_from_anchor", false},
          {"speculators_config",
           {{"algorithm", "dflash"},
            {"proposal_methods", {{{"proposal_type", "greedy"}, {"speculative_tokens", 7}}}},
            {"verifier", {{"name_or_path", "Qwen/Qwen3-8B"}}}}}};
}

// Formerly refused as a whole ("the speculators format"), a speculators config is read: every
// key implemented or inert, the layer config's keys by the z-lab rules under their nested path.
TEST(DrafterKeys, SpeculatorsConfigIsReadKeyByKey) {
  const auto c = cfg(speculators_reference());
  EXPECT_EQ(detect_drafter_format(c), DrafterFormat::kSpeculators);
  EXPECT_TRUE(refused_keys(c).empty());
  std::map<std::string, KeyStatus> status;
  for (const auto& f : key_facts(c)) status[f.key] = f.status;
  EXPECT_EQ(status.at("speculators_model_type"), KeyStatus::kImplemented);
  EXPECT_EQ(status.at("aux_hidden_state_layer_ids"), KeyStatus::kImplemented);
  EXPECT_EQ(status.at("draft_vocab_size"), KeyStatus::kImplemented);
  EXPECT_EQ(status.at("transformer_layer_config.hidden_size"), KeyStatus::kImplemented);
  EXPECT_EQ(status.at("transformer_layer_config.tie_word_embeddings"), KeyStatus::kInert);
  EXPECT_EQ(status.at("speculators_config"), KeyStatus::kInert);
  EXPECT_EQ(DrafterConfig::from(c).target_layer_ids, (std::vector<std::int64_t>{0, 2}));
}

TEST(DrafterKeys, EachRefusedSpeculatorsKeyIsNamedWithItsValueAndEffect) {
  const std::vector<Refusal> refusals = {
      {"model_type_dspark", [](json& j) { j["speculators_model_type"] = "dspark"; },
       "speculators_model_type = \"dspark\": names another speculators algorithm"},
      {"architecture", [](json& j) { j["architectures"] = {"DSparkSpeculator"}; },
       "architectures = [\"DSparkSpeculator\"]: names another speculators model class"},
      {"sample_from_anchor", [](json& j) { j["sample_from_anchor"] = true; },
       "sample_from_anchor = true: drafts block_size tokens"},
      {"draft_vocab_above_target", [](json& j) { j["draft_vocab_size"] = 65; },
       "draft_vocab_size = 65: a draft vocabulary larger than"},
      {"target_hidden_size", [](json& j) { j["target_hidden_size"] = 32; },
       "target_hidden_size = 32: an fc input width"},
      {"speculative_tokens",
       [](json& j) { j["speculators_config"]["proposal_methods"][0]["speculative_tokens"] = 3; },
       "speculators_config = {\"algorithm\": \"dflash\", \"proposal_methods\""},
      {"layer_config_dflash_config",
       [](json& j) { j["transformer_layer_config"]["dflash_config"] = json::object(); },
       "transformer_layer_config.dflash_config = {}: a z-lab key inside transformer_layer_config"},
      {"layer_config_unknown", [](json& j) { j["transformer_layer_config"]["markov_rank"] = 4; },
       "transformer_layer_config.markov_rank = 4: unknown to draftgate"},
      {"layer_config_attention_bias",
       [](json& j) { j["transformer_layer_config"]["attention_bias"] = true; },
       "transformer_layer_config.attention_bias = true: adds biases"},
      {"unknown_top_level", [](json& j) { j["markov_rank"] = 4; },
       "markov_rank = 4: unknown to draftgate"},
  };
  for (const auto& r : refusals) expect_one_refusal(speculators_reference(), r);
}

TEST(DrafterKeys, EachRefusedKeyIsNamedWithItsValueAndEffect) {
  for (const auto& r : kRefusals) expect_one_refusal(reference(), r);
}

TEST(DrafterKeys, SeveralRefusedKeysAreCountedInTheOneLine) {
  json j = reference();
  j["dflash_config"]["projector_type"] = "gru";
  j["dflash_config"]["sample_from_anchor"] = true;
  EXPECT_EQ(refused_keys(cfg(j)).size(), 2u);
  EXPECT_THAT(error_of([&] { DrafterConfig::from(cfg(j)); }),
              HasSubstr("(and 1 more refused key: `draftgate probe` lists them)"));
}

TEST(DrafterKeys, DefaultsOfTheVariantKeysAreInert) {
  json j = reference();
  j["dflash_config"].update({{"projector_type", "dflash"},
                             {"pure_draft_prefix_len", 0},
                             {"shift_label", false},
                             {"sample_from_anchor", false},
                             {"attention_sink_bias", false},
                             {"use_aux_hidden_state", true}});
  j.update({{"draft_vocab_size", 64},
            {"is_neox_style", true},
            {"logit_scale", 1.0},
            {"use_sliding_window", false},
            {"hidden_act", "silu"},
            {"attention_bias", false},
            {"torch_dtype", "bfloat16"}});
  EXPECT_TRUE(refused_keys(cfg(j)).empty());
  EXPECT_NO_THROW(DrafterConfig::from(cfg(j)));
}

TEST(DrafterKeys, MaskEmbeddingFileIsRefused) {
  const fs::path dir = fs::temp_directory_path() / "draftgate_drafter_keys_mask_embedding";
  fs::remove_all(dir);
  fs::create_directories(dir);
  EXPECT_TRUE(refused_files(dir).empty());
  std::ofstream(dir / "mask_embedding.pt") << "x";
  const auto files = refused_files(dir);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_THAT(files[0].line(), HasSubstr("mask_embedding.pt: a separate MASK embedding"));
  std::ofstream(dir / "config.json") << reference().dump();
  const fs::path self = dir;
  EXPECT_THAT(error_of([&] { refuse_unread(io::ModelConfig::load(dir / "config.json"), &self); }),
              HasSubstr("refused mask_embedding.pt"));
  fs::remove_all(dir);
}

// vLLM `_resolve_layer_attention` @036a00d1, written out per case: (layer_types, use_swa,
// swa_window_size, sliding_window) -> each layer's window under z-lab and under vLLM.
TEST(DrafterKeys, UseSwaAndSwaWindowSizeReadAsVllmDoes) {
  using W = std::vector<std::optional<std::int64_t>>;
  struct Row {
    json layer_types;
    json use_swa, swa_window, sliding_window;
    W zlab, vllm;
  };
  const json full2 = {"full_attention", "full_attention"};
  const json mixed = {"sliding_attention", "full_attention"};
  const Row rows[] = {
      // use_swa forces a window on an all-full drafter in vLLM only.
      {full2, true, 4, nullptr, W{std::nullopt, std::nullopt}, W{4, 4}},
      {nullptr, true, nullptr, 6, W{std::nullopt, std::nullopt}, W{6, 6}},
      // With sliding layers, use_swa changes nothing; swa_window_size replaces the window.
      {mixed, true, 3, 8, W{8, std::nullopt}, W{3, std::nullopt}},
      {mixed, nullptr, nullptr, 8, W{8, std::nullopt}, W{8, std::nullopt}},
      {full2, false, 5, nullptr, W{std::nullopt, std::nullopt}, W{std::nullopt, std::nullopt}},
  };
  for (const auto& row : rows) {
    json j = reference();
    if (!row.layer_types.is_null()) j["layer_types"] = row.layer_types;
    for (const auto& t : j.value("layer_types", json::array()))
      if (t == "sliding_attention") j["use_sliding_window"] = true;
    if (!row.use_swa.is_null()) j["dflash_config"]["use_swa"] = row.use_swa;
    if (!row.swa_window.is_null()) j["dflash_config"]["swa_window_size"] = row.swa_window;
    if (!row.sliding_window.is_null()) j["sliding_window"] = row.sliding_window;
    const std::string where = j.dump();
    const auto zlab = DrafterConfig::from(cfg(j));
    const auto vllm = DrafterConfig::from(cfg(j), CausalityReading::kVllm);
    EXPECT_EQ(zlab.layer_window, row.zlab) << where;
    EXPECT_EQ(vllm.layer_window, row.vllm) << where;
    EXPECT_EQ(zlab.causality.readings_disagree(), row.zlab != row.vllm) << where;
    // vLLM's causality stays the legacy rule: full layers non-causal even when use_swa slides.
    EXPECT_EQ(vllm.layer_causal, zlab.layer_causal) << where;
    if (row.zlab != row.vllm) {
      EXPECT_THAT(causality_note(zlab, "config.json").value_or(""),
                  HasSubstr("using z-lab's reading (--causality vllm applies vLLM's)"))
          << where;
    }
  }
}

TEST(DrafterKeys, UseSwaWithoutAnyWindowIsRefusedUnderVllmReading) {
  json j = reference();
  j["dflash_config"]["use_swa"] = true;
  EXPECT_NO_THROW(DrafterConfig::from(cfg(j)));  // z-lab ignores use_swa
  EXPECT_THAT(error_of([&] { DrafterConfig::from(cfg(j), CausalityReading::kVllm); }),
              HasSubstr("neither dflash_config.swa_window_size nor sliding_window gives a window"));
  j["dflash_config"]["swa_window_size"] = 0;
  EXPECT_THAT(error_of([&] { DrafterConfig::from(cfg(j)); }),
              HasSubstr("dflash_config.swa_window_size must be a positive integer, got 0"));
}

}  // namespace
}  // namespace draftgate::model
