// `draftgate probe` end to end: real layouts, JSON output, and the exit-code contract on bad input.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>
#include <utility>

#include "draftgate/io/safetensors.h"
#include "fixture_paths.h"
#include "run_cli.h"
#include "synthetic_layouts.h"

namespace draftgate {
namespace {

using testing::kRealLayouts;

using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_draftgate;
namespace fs = std::filesystem;

TEST(ProbeCli, Qwen36VlmJson) {
  const auto r =
      run_draftgate("probe " + (kRealLayouts / "qwen36-27b-awq-fantasylord").string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["decoder_prefix"], "model.language_model.layers");
  EXPECT_EQ(j["num_layers"], 64);
  ASSERT_EQ(j["layer_types"].size(), 64u);
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(j["layer_types"][i], (i % 4 == 3) ? "full_attention" : "linear_attention")
        << "layer " << i;
  EXPECT_EQ(j["embed_tokens"], "model.language_model.embed_tokens.weight");
  EXPECT_EQ(j["final_norm"], "model.language_model.norm.weight");
  EXPECT_EQ(j["lm_head"], "lm_head.weight");
  EXPECT_EQ(j["tied_embeddings"], false);
  EXPECT_EQ(j["metadata_only"], true);
  ASSERT_EQ(j["rejected_stacks"].size(), 2u);
  EXPECT_EQ(j["rejected_stacks"][0]["prefix"], "model.visual.blocks");
  EXPECT_EQ(j["rejected_stacks"][0]["count"], 27);
  EXPECT_EQ(j["rejected_stacks"][1]["prefix"], "mtp.layers");
}

TEST(ProbeCli, HumanOutputAndTree) {
  const auto r = run_draftgate("probe " + (kRealLayouts / "medgemma-27b-it").string() + " --tree");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("decoder      language_model.model.layers  ×62"));
  EXPECT_THAT(r.out, HasSubstr("full_attention ×10 {5,11,…,59}"));
  EXPECT_THAT(r.out,
              HasSubstr("rejected     vision_tower.vision_model.encoder.layers [0..26] ×27"));
  EXPECT_THAT(r.out, HasSubstr("layers.{0..61}  ×62"));
}

TEST(ProbeCli, ShapesFromRealWeights) {
  const fs::path dir = testing::fresh_dir("cli_weights");
  testing::write_tiny_weights(dir, testing::qwen35_vlm(4, 2));
  const auto r = run_draftgate("probe " + dir.string() + " --tree");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("A_log  F32 [2]"));
  EXPECT_THAT(r.out, Not(HasSubstr("metadata-only")));
}

TEST(ProbeCli, UsageErrorsExitTwoAndHelpExitsZero) {
  EXPECT_EQ(run_draftgate("").exit_code, 2);
  EXPECT_EQ(run_draftgate("frobnicate").exit_code, 2);
  EXPECT_EQ(run_draftgate("probe").exit_code, 2);
  EXPECT_EQ(run_draftgate("probe . --bogus").exit_code, 2);
  EXPECT_EQ(run_draftgate("--help").exit_code, 0);
  EXPECT_EQ(run_draftgate("probe --help").exit_code, 0);
}

// --- bad input: exit 2, one line on stderr naming the file and the problem ---

// 8-byte little-endian length (possibly a lie), header, then `data_bytes` zero bytes.
std::string with_length(std::uint64_t declared_len, const std::string& header,
                        std::uint64_t data_bytes = 0) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((declared_len >> (8 * i)) & 0xff);
  return out + header + std::string(data_bytes, '\0');
}
std::string framed(const std::string& header, std::uint64_t data_bytes = 0) {
  return with_length(header.size(), header, data_bytes);
}

struct BadCheckpoint {
  std::string label;
  std::string file;      // file to write ("" = write nothing)
  std::string contents;  // its bytes
  std::string config;    // config.json contents ("" = none)
  std::string culprit;   // file name the message must name
  std::string message;
};

void PrintTo(const BadCheckpoint& c, std::ostream* os) { *os << c.label; }

class BadInputTest : public ::testing::TestWithParam<BadCheckpoint> {};

TEST_P(BadInputTest, ExitsTwoWithOneLine) {
  const auto& c = GetParam();
  const fs::path dir = testing::fresh_dir("bad_" + c.label);
  if (!c.config.empty()) std::ofstream(dir / "config.json") << c.config;
  if (!c.file.empty()) std::ofstream(dir / c.file, std::ios::binary) << c.contents;
  const auto r = run_draftgate("probe " + dir.string());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("draftgate: error: "));
  EXPECT_THAT(r.err, HasSubstr(c.culprit));
  EXPECT_THAT(r.err, HasSubstr(c.message));
}

const std::string kCfg = R"({"num_hidden_layers": 1})";
const std::string kSt = "model.safetensors";
const std::string kIdx = "model.safetensors.index.json";
const std::string kT = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
const std::string kU = R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]})";
const std::string kV = R"("b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]})";

INSTANTIATE_TEST_SUITE_P(
    Catalogue, BadInputTest,
    ::testing::Values(
        BadCheckpoint{"truncated_length", kSt, "abc", kCfg, kSt,
                      "shorter than the 8-byte header length"},
        BadCheckpoint{"length_past_file", kSt, with_length(500, "{}"), kCfg, kSt,
                      "runs past the end"},
        BadCheckpoint{"absurd_length", kSt, with_length(1ull << 50, "{}"), kCfg, kSt,
                      "exceeds the 100000000-byte"},
        BadCheckpoint{"non_object_json", kSt, framed("[1, 2, 3]"), kCfg, kSt, "not a JSON object"},
        BadCheckpoint{"invalid_json", kSt, framed("{\"a\": }"), kCfg, kSt, "invalid JSON"},
        BadCheckpoint{"invalid_utf8", kSt, framed("{\"\xc3\x28\": 1}"), kCfg, kSt, "invalid JSON"},
        BadCheckpoint{"duplicate_keys", kSt, framed("{" + kT + "," + kT + "}", 8), kCfg, kSt,
                      "duplicate JSON key"},
        BadCheckpoint{"unknown_dtype", kSt,
                      framed(R"({"a":{"dtype":"INT4","shape":[2],"data_offsets":[0,8]}})", 8), kCfg,
                      kSt, "unsupported dtype \"INT4\""},
        BadCheckpoint{"shape_size_mismatch", kSt,
                      framed(R"({"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,8]}})", 8), kCfg,
                      kSt, "needs 4"},
        BadCheckpoint{"offsets_out_of_range", kSt, framed("{" + kT + "}", 4), kCfg, kSt,
                      "past the data buffer"},
        BadCheckpoint{"overlapping", kSt, framed("{" + kT + "," + kU + "}", 8), kCfg, kSt,
                      "overlaps"},
        BadCheckpoint{"hole", kSt, framed("{" + kT + "," + kV + "}", 16), kCfg, kSt,
                      "hole in the data buffer"},
        BadCheckpoint{"trailing_bytes", kSt, framed("{" + kT + "}", 20), kCfg, kSt,
                      "12 trailing bytes"},
        BadCheckpoint{
            "rank_limit", kSt,
            framed(R"({"a":{"dtype":"U8","shape":[1,1,1,1,1,1,1,1,1,1],"data_offsets":[0,1]}})", 1),
            kCfg, kSt, "rank 10 exceeds"},
        BadCheckpoint{
            "shape_overflow", kSt,
            framed(R"({"a":{"dtype":"F64","shape":[4611686018427387904,8],"data_offsets":[0,8]}})",
                   8),
            kCfg, kSt, "overflows 64-bit"},
        BadCheckpoint{"metadata_not_strings", kSt, framed(R"({"__metadata__":{"format":["pt"]}})"),
                      kCfg, kSt, "__metadata__ value for \"format\" is not a string"},
        BadCheckpoint{"missing_config", kSt, framed("{}"), "", "config.json", "missing"},
        BadCheckpoint{"config_not_json", kSt, framed("{}"), "{num_hidden_layers: 2}", "config.json",
                      "invalid JSON"},
        BadCheckpoint{"config_without_layer_count", kSt, framed("{" + kT + "}", 8),
                      R"({"hidden_size": 8})", "config.json", "missing num_hidden_layers"},
        BadCheckpoint{"index_without_weight_map", kIdx, R"({"metadata": {}})", kCfg, kIdx,
                      "missing \"weight_map\""},
        BadCheckpoint{"index_weight_map_not_object", kIdx, R"({"weight_map": []})", kCfg, kIdx,
                      "\"weight_map\" is not an object"},
        BadCheckpoint{"no_weights", "", "", kCfg, "bad_no_weights",
                      "no model.safetensors.index.json, model.safetensors or *.safetensors"},
        BadCheckpoint{"empty_checkpoint", kSt, framed("{}"), kCfg, "bad_empty_checkpoint",
                      "holds no tensors"},
        BadCheckpoint{"no_decoder_stack", kSt, framed("{" + kT + "}", 8), kCfg,
                      "bad_no_decoder_stack", "no decoder stack matches num_hidden_layers = 1"}),
    [](const auto& p) { return p.param.label; });

TEST(ProbeCli, NotADirectory) {
  const auto r = run_draftgate("probe /nonexistent/checkpoint");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/checkpoint: no such directory"));
}

TEST(ProbeCli, LayerCountMismatchListsCandidates) {
  const fs::path dir = testing::fresh_dir("cli_mismatch");
  auto l = testing::qwen35_vlm(8, 3);
  l.config["text_config"]["num_hidden_layers"] = 12;
  l.config["text_config"].erase("layer_types");
  testing::write_metadata_only(dir, l);
  const auto r = run_draftgate("probe " + dir.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(
      r.err,
      HasSubstr("model.language_model.layers [0..7] 8 layers - count 8 != num_hidden_layers 12"));
  EXPECT_THAT(r.err, HasSubstr("model.visual.blocks"));
}

// probe --json's engine verdict on `dir`: engine_supported and the notes joined by " | ".
std::pair<bool, std::string> engine_verdict(const fs::path& dir) {
  const auto r = run_draftgate("probe " + dir.string() + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::string notes;
  for (const auto& n : j["engine_notes"]) notes += n.get<std::string>() + " | ";
  return {j["engine_supported"].get<bool>(), notes};
}

TEST(ProbeCli, SaysWhetherTheEngineCanRunEachRealLayout) {
  for (const char* ok : {"qwen3-4b-hf", "jev-qwen35-2b-text"}) {
    const auto [supported, notes] = engine_verdict(kRealLayouts / ok);
    EXPECT_TRUE(supported) << ok << ": " << notes;
    EXPECT_EQ(notes, "") << ok;
  }
  auto [supported, notes] = engine_verdict(kRealLayouts / "qwen36-27b-awq-fantasylord");
  EXPECT_FALSE(supported);
  EXPECT_THAT(notes, HasSubstr("quantised weights (quantization_config.quant_method "
                               "compressed-tensors)"));
  std::tie(supported, notes) = engine_verdict(kRealLayouts / "medgemma-27b-it");
  EXPECT_FALSE(supported);
  EXPECT_THAT(notes,
              HasSubstr("model_type \"gemma3_text\" is not a target family draftgate knows"));
  EXPECT_THAT(notes, HasSubstr("sliding-window attention (layer_types has sliding_attention"));
  EXPECT_THAT(notes, HasSubstr("rope_scaling.rope_type \"linear\""));
  std::tie(supported, notes) = engine_verdict(kRealLayouts / "olmocr-qwen2vl");
  EXPECT_FALSE(supported);
  EXPECT_THAT(notes, HasSubstr("model_type \"qwen2_vl\""));

  // The text output says it too.
  const auto r = run_draftgate("probe " + (kRealLayouts / "qwen36-27b-awq-fantasylord").string());
  EXPECT_THAT(r.out, HasSubstr("engine       NOT supported: quantised weights"));
  EXPECT_THAT(run_draftgate("probe " + (kRealLayouts / "qwen3-4b-hf").string()).out,
              HasSubstr("engine       supported"));
}

TEST(ProbeCli, FlagsMoeSlidingWindowActivationBiasRopeScalingQuantisedTensorsAndLoadRefusals) {
  const fs::path src = kRealLayouts / "qwen3-4b-hf";
  const auto variant = [&](const std::string& name, const nlohmann::json& patch) {
    const fs::path dir = testing::fresh_dir("engine_" + name);
    fs::copy(src, dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    nlohmann::json config = nlohmann::json::parse(std::ifstream(src / "config.json"));
    config.merge_patch(patch);
    std::ofstream(dir / "config.json") << config.dump();
    return dir;
  };
  // MoE outside the MoE families: an unknown MoE type, or experts in a dense family's config.
  auto [supported, notes] =
      engine_verdict(variant("moe", {{"model_type", "qwen2_moe"}, {"num_experts", 60}}));
  EXPECT_FALSE(supported);
  EXPECT_THAT(notes, HasSubstr("MoE MLPs (model_type qwen2_moe)"));
  std::tie(supported, notes) = engine_verdict(variant("dense_moe", {{"num_experts", 128}}));
  EXPECT_FALSE(supported);
  EXPECT_THAT(notes,
              HasSubstr("MoE MLPs (model_type qwen3): the engine runs dense MLPs for qwen3"));
  std::tie(supported, notes) = engine_verdict(variant("swa", {{"use_sliding_window", true}}));
  EXPECT_FALSE(supported);
  EXPECT_THAT(notes, HasSubstr("sliding-window attention"));
  // What loading the target refuses (model::unsupported_config_value), probe does not call
  // supported.
  std::tie(supported, notes) = engine_verdict(variant("gelu", {{"hidden_act", "gelu"}}));
  EXPECT_FALSE(supported);
  EXPECT_THAT(notes, HasSubstr("hidden_act = \"gelu\" is not supported: the engine's MLP is "
                               "SwiGLU with silu"));
  std::tie(supported, notes) = engine_verdict(variant("bias", {{"attention_bias", true}}));
  EXPECT_FALSE(supported);
  EXPECT_THAT(notes, HasSubstr("attention_bias = true is not supported"));
  std::tie(supported, notes) =
      engine_verdict(variant("yarn", {{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}}}));
  EXPECT_FALSE(supported);
  EXPECT_THAT(notes,
              HasSubstr("rope_scaling.rope_type \"yarn\": the engine computes default RoPE"));

  // GPTQ tensors without a quantization_config are still quantised weights.
  const fs::path gptq = variant("gptq", nlohmann::json::object());
  nlohmann::json index = nlohmann::json::parse(std::ifstream(src / "model.safetensors.index.json"));
  index["weight_map"]["model.layers.0.mlp.down_proj.qweight"] = "model-00001-of-00002.safetensors";
  std::ofstream(gptq / "model.safetensors.index.json") << index.dump();
  std::tie(supported, notes) = engine_verdict(gptq);
  EXPECT_FALSE(supported);
  EXPECT_THAT(notes, HasSubstr("quantised weights (AWQ/GPTQ tensors such as "
                               "model.layers.0.mlp.down_proj.qweight)"));

  // What loading the target refuses beyond the config's values: a class of another family in
  // architectures, an untied lm_head the checkpoint lacks, float8 tensors nothing scales.
  std::tie(supported, notes) =
      engine_verdict(variant("arch", {{"architectures", {"Qwen3MoeForCausalLM"}}}));
  EXPECT_FALSE(supported);
  EXPECT_THAT(notes, HasSubstr("architectures names Qwen3MoeForCausalLM, a Qwen3-MoE"));
  EXPECT_THAT(notes, HasSubstr("class, but model_type \"qwen3\" is Qwen3 dense"));
  std::tie(supported, notes) = engine_verdict(variant("untied", {{"tie_word_embeddings", false}}));
  EXPECT_FALSE(supported);
  EXPECT_THAT(notes, HasSubstr("tie_word_embeddings is false but the checkpoint has no lm_head"));
  const fs::path f8 = testing::fresh_dir("engine_f8");
  fs::copy_file(src / "config.json", f8 / "config.json");
  static const char kBytes[8] = {};
  std::vector<io::TensorBytes> tensors;
  for (const auto& [name, file] : index["weight_map"].items()) {
    const bool float8 = name == "model.layers.1.mlp.up_proj.weight";
    if (name != "model.layers.0.mlp.down_proj.qweight")  // the GPTQ entry above
      tensors.push_back({name,
                         float8 ? io::DType::F8_E4M3 : io::DType::F32,
                         {2},
                         std::string_view(kBytes, float8 ? 2 : 8)});
  }
  io::write_safetensors(f8 / "model.safetensors", tensors);
  std::tie(supported, notes) = engine_verdict(f8);
  EXPECT_FALSE(supported);
  EXPECT_THAT(notes, HasSubstr("float8 weights (model.layers.1.mlp.up_proj.weight is stored "
                               "F8_E4M3) but no quantization_config says how they are scaled"));
}

}  // namespace
}  // namespace draftgate
