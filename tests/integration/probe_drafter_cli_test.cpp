// `draftgate probe DRAFTER`: the facts of the bundled and published drafters from config.json
// alone, the refused keys of SpecForge's Domino / DSpark configs, a speculators config read, and
// the engines' readings side by side.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "fixture_paths.h"
#include "run_cli.h"

namespace draftgate {
namespace {

using testing::kSourceDir;

using ::testing::HasSubstr;
using testing::run_draftgate;
namespace fs = std::filesystem;
using nlohmann::json;

json probe_json(const fs::path& dir) {
  const auto r = run_draftgate("probe " + dir.string() + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  return json::parse(r.out);
}

// A drafter directory holding only `config` (no weights: probe reads none).
fs::path config_only(const std::string& name, const json& config) {
  const fs::path dir = fs::temp_directory_path() / ("draftgate_probe_drafter_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << config.dump(2);
  return dir;
}

json file_json(const fs::path& p) { return json::parse(std::ifstream(p)); }

TEST(ProbeDrafterCli, BundledReferenceDrafter) {
  const fs::path dir = kSourceDir / "fixtures/trained/qwen3-drafter-reference";
  const json j = probe_json(dir);
  EXPECT_EQ(j["format"], "z-lab");
  EXPECT_EQ(j["kind"], "DFlash");
  EXPECT_EQ(j["block_size"], 8);
  EXPECT_EQ(j["mask_token_id"], 63);
  EXPECT_EQ(j["taps_zlab"], json::parse("[0, 2]"));
  EXPECT_EQ(j["taps_as_written"]["key"], "dflash_config.target_layer_ids");
  EXPECT_EQ(j["vocabulary"]["reduced"], false);
  EXPECT_EQ(j["engines_disagree"], false);
  EXPECT_EQ(j["refused"], json::array());
  ASSERT_EQ(j["layers"]["zlab"].size(), 2u);
  EXPECT_EQ(j["layers"]["zlab"][0],
            json::parse(R"({"type":"full_attention","window":null,"causal":false})"));
  const auto text = run_draftgate("probe " + dir.string());
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("kind             DFlash"));
  EXPECT_THAT(text.out, HasSubstr("layers (z-lab)   0 full non-causal, 1 full non-causal"));
  EXPECT_THAT(text.out,
              HasSubstr("refused          none: every key is implemented or known inert"));
}

TEST(ProbeDrafterCli, PublishedConfigs) {
  // SpecForge qwen3.6-27b: four sliding layers (causal, window 2048) and one full layer.
  const json q36 = probe_json(config_only(
      "q36",
      file_json(kSourceDir / "fixtures/real-layouts/specforge-dflash/qwen3.6-27b-dflash.json")));
  EXPECT_EQ(q36["taps_zlab"], json::parse("[1, 16, 31, 46, 61]"));
  EXPECT_EQ(q36["block_size"], 16);
  EXPECT_EQ(q36["layers"]["zlab"][0],
            json::parse(R"({"type":"sliding_attention","window":2048,"causal":true})"));
  EXPECT_EQ(q36["layers"]["zlab"][4],
            json::parse(R"({"type":"full_attention","window":null,"causal":false})"));
  EXPECT_EQ(q36["engines_disagree"], false);
  EXPECT_EQ(q36["refused"], json::array());
  // z-lab DFlash2: kind from the architecture, block size under dflash_config.
  const json d2 = probe_json(kSourceDir / "fixtures/real-layouts/zlab-dflash2");
  EXPECT_EQ(d2["kind"], "DFlash2");
  EXPECT_EQ(d2["block_size"], 16);
  EXPECT_EQ(d2["refused"], json::array());
}

TEST(ProbeDrafterCli, SpecForgeDominoAndDSparkConfigsAreRefusedForTheirHeads) {
  const fs::path variants = kSourceDir / "fixtures/real-layouts/specforge-variants";
  struct Row {
    const char* file;
    std::vector<std::string> refused;
  };
  const Row rows[] = {
      {"qwen3-8b-domino.json",
       {"emb_dim", "architectures", "dflash_config.projector_type",
        "dflash_config.pure_draft_prefix_len", "dflash_config.emb_dim",
        "dflash_config.gru_hidden_dim", "dflash_config.shift_label"}},
      {"qwen3.6-27b-domino-full-attention.json",
       {"architectures", "dflash_config.projector_type", "dflash_config.pure_draft_prefix_len",
        "dflash_config.emb_dim", "dflash_config.gru_hidden_dim"}},
      {"qwen3-8b-dspark.json",
       {"architectures", "dflash_config.attention_mode", "dflash_config.confidence_head_alpha",
        "dflash_config.confidence_head_with_markov", "dflash_config.enable_confidence_head",
        "dflash_config.markov_head_type", "dflash_config.markov_rank",
        "dflash_config.projector_type"}},
  };
  for (const auto& row : rows) {
    const json j = probe_json(config_only(row.file, file_json(variants / row.file)));
    std::vector<std::string> keys;
    for (const auto& r : j["refused"]) keys.push_back(r["key"]);
    std::sort(keys.begin(), keys.end());
    auto expected = row.refused;
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(keys, expected) << row.file;
  }
}

// What speculators writes for a drafter of block 8 (and vLLM requires before loading one).
const json kSpeculatorsConfig = {
    {"algorithm", "dflash"},
    {"proposal_methods", {{{"proposal_type", "greedy"}, {"speculative_tokens", 7}}}},
    {"verifier", {{"name_or_path", "Qwen/Qwen3-8B"}}}};

TEST(ProbeDrafterCli, SpeculatorsTapsInBothConventions) {
  // The shape speculators' DFlashSpeculatorConfig writes (src/speculators/models/dflash/config.py).
  const json spec = {{"speculators_model_type", "dflash"},
                     {"architectures", {"DFlashSpeculator"}},
                     {"block_size", 8},
                     {"mask_token_id", 63},
                     {"draft_vocab_size", 32},
                     {"aux_hidden_state_layer_ids", {1, 3}},
                     {"speculators_config", kSpeculatorsConfig},
                     {"transformer_layer_config",
                      {{"model_type", "qwen3"},
                       {"vocab_size", 64},
                       {"num_hidden_layers", 2},
                       {"hidden_size", 64},
                       {"intermediate_size", 192},
                       {"num_attention_heads", 4},
                       {"num_key_value_heads", 2},
                       {"head_dim", 16},
                       {"rms_norm_eps", 1e-6},
                       {"rope_theta", 1e6}}}};
  const json j = probe_json(config_only("speculators", spec));
  EXPECT_EQ(j["format"], "speculators");
  EXPECT_EQ(j["kind"], "DFlash (speculators)");
  EXPECT_EQ(j["taps_zlab"], json::parse("[0, 2]"));
  EXPECT_EQ(j["taps_as_written"]["ids"], json::parse("[1, 3]"));
  EXPECT_EQ(j["vocabulary"]["reduced"], true);
  EXPECT_EQ(j["vocabulary"]["draft_vocab_size"], 32);
  // Read natively now (formerly refused as a whole at speculators_model_type): no refused key,
  // and the layers as the engines run them, from transformer_layer_config.
  EXPECT_EQ(j["refused"], json::array());
  EXPECT_EQ(j["read"], true);
  EXPECT_EQ(j["layers"]["zlab"].size(), 2u);
  EXPECT_EQ(j["engines_disagree"], false);
  EXPECT_THAT(j["vocabulary"]["embedding_and_head"].get<std::string>(), HasSubstr("its own"));
  // A key of another speculators algorithm is refused by name.
  json dspark = spec;
  dspark["speculators_model_type"] = "dspark";
  const json d = probe_json(config_only("speculators_dspark", dspark));
  EXPECT_EQ(d["read"], false);
  ASSERT_EQ(d["refused"].size(), 1u);
  EXPECT_EQ(d["refused"][0]["key"], "speculators_model_type");
}

// A config every evaluator refuses is not "read" (probe said read: true, "refused none", and
// printed taps of strings; a transformer_layer_config that is no object was nlohmann's
// type_error): named as the evaluators name it.
TEST(ProbeDrafterCli, AConfigTheEvaluatorsRefuseIsNotRead) {
  const json reference =
      file_json(kSourceDir / "fixtures/trained/qwen3-drafter-reference/config.json");
  json strings = reference, block = reference;
  strings["dflash_config"]["target_layer_ids"] = {"0", "2"};
  block["block_size"] = 0;
  block["dflash_config"]["block_size"] = 0;
  for (const auto& [name, config, effect] :
       {std::tuple{"taps_strings", strings, "target_layer_ids holds \"0\", not a layer id"},
        {"block_0", block, "block_size 0 is out of range"}}) {
    const json j = probe_json(config_only(name, config));
    EXPECT_EQ(j["read"], false) << name;
    ASSERT_EQ(j["refused"].size(), 1u) << name;
    EXPECT_EQ(j["refused"][0]["key"], "config.json");
    EXPECT_THAT(j["refused"][0]["effect"].get<std::string>(), HasSubstr(effect));
  }
  const json speculators = {{"speculators_model_type", "dflash"},
                            {"architectures", {"DFlashSpeculator"}},
                            {"aux_hidden_state_layer_ids", {1, 3}},
                            {"speculators_config", kSpeculatorsConfig},
                            {"transformer_layer_config", "qwen3"}};
  const fs::path dir = config_only("tlc_string", speculators);
  const auto text = run_draftgate("probe " + dir.string());
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("refused          transformer_layer_config = \"qwen3\""));
  const json j = probe_json(dir);
  EXPECT_EQ(j["read"], false);
}

TEST(ProbeDrafterCli, NamesEveryDisagreementBetweenEngines) {
  json c = file_json(kSourceDir / "fixtures/trained/qwen3-drafter-reference/config.json");
  c["dflash_config"]["use_swa"] = true;
  c["dflash_config"]["swa_window_size"] = 4;
  c["dflash_config"]["causal"] = true;
  const fs::path dir = config_only("swa", c);
  const json j = probe_json(dir);
  EXPECT_EQ(j["engines_disagree"], true);
  EXPECT_EQ(j["layers_text"]["zlab"], "0 full non-causal, 1 full non-causal");
  EXPECT_EQ(j["layers_text"]["vllm"], "0 sliding(4) causal, 1 sliding(4) causal");
  const auto text = run_draftgate("probe " + dir.string());
  EXPECT_THAT(text.out, HasSubstr("layers (vLLM)    0 sliding(4) causal, 1 sliding(4) causal  "
                                  "(engines DISAGREE)"));
}

TEST(ProbeDrafterCli, MaskEmbeddingFileListedAndTreeRefused) {
  const fs::path dir =
      config_only("mask_embedding",
                  file_json(kSourceDir / "fixtures/trained/qwen3-drafter-reference/config.json"));
  std::ofstream(dir / "mask_embedding.pt") << "x";
  const json j = probe_json(dir);
  ASSERT_EQ(j["refused"].size(), 1u);
  EXPECT_EQ(j["refused"][0]["key"], "mask_embedding.pt");
  const auto tree = run_draftgate("probe " + dir.string() + " --tree");
  EXPECT_EQ(tree.exit_code, 2);
  EXPECT_THAT(tree.err, HasSubstr("--tree is for targets"));
}

}  // namespace
}  // namespace draftgate
