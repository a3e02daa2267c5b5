// drafter_config proven both ways: it passes every bundled reference drafter with its target (and
// real published drafter / target config pairs), and fails one config variant per mistake, each
// naming the key — and each rule's parameter relaxes exactly that failure.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "checks/check.h"
#include "fixture_paths.h"
#include "test_files.h"

namespace draftgate::checks {
namespace {

using testing::kSourceDir;
using testing::kTrained;

using ::testing::HasSubstr;
namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kReal = kSourceDir / "fixtures/real-layouts";

CheckResult run(const Artifacts& a, const json& params = nullptr) {
  const Check* c = find_check("drafter_config");
  EXPECT_NE(c, nullptr);
  return run_check(*c, a, params);
}

json read(const fs::path& path) { return json::parse(testing::read_file(path)); }

// A directory holding only config.json: the check reads nothing else.
fs::path config_dir(const std::string& name, const json& config) {
  const fs::path dir = testing::fresh_dir("drafter_config_" + name);
  testing::write_file(dir / "config.json", config.dump(2));
  return dir;
}

Artifacts pair(const fs::path& target, const fs::path& drafter) {
  Artifacts a;
  a.target = target;
  a.drafter = drafter;
  return a;
}

TEST(DrafterConfigCheck, PassesEveryBundledReferenceDrafter) {
  for (const auto& [target, drafter] : std::vector<std::pair<const char*, const char*>>{
           {"qwen3-target", "qwen3-drafter-reference"},
           {"qwen35-target", "qwen35-drafter-reference"},
           {"qwen35-target", "qwen35-drafter-kl-loss"},
           {"qwen35-target", "qwen35-drafter-teacher-noise"}}) {
    const CheckResult r = run(pair(kTrained / target, kTrained / drafter));
    EXPECT_EQ(r.status, Status::kPass) << drafter << ": " << r.message;
    EXPECT_THAT(r.message, HasSubstr("is_causal absent: derived per layer")) << drafter;
    EXPECT_EQ(r.measured["layer_causality"][0]["causal"], false) << drafter;
  }
  // The Qwen3.5 fixture drafters were trained at θ 1e6 for a 1e7 target: within the default ratio.
  const CheckResult q35 =
      run(pair(kTrained / "qwen35-target", kTrained / "qwen35-drafter-reference"));
  EXPECT_EQ(q35.measured["target_rope_theta"], 1e7) << "read from text_config.rope_parameters";
  EXPECT_EQ(q35.measured["rope_theta_ratio"], 10.0);
  // The final-layer-leak fixture taps layer 3 of 4.
  const CheckResult leak =
      run(pair(kTrained / "qwen35-target", kTrained / "qwen35-drafter-final-layer-leak"));
  EXPECT_EQ(leak.status, Status::kFail);
  EXPECT_THAT(leak.message, HasSubstr("dflash_config.target_layer_ids: 3 is the target's final"));
}

TEST(DrafterConfigCheck, PublishedDrafterAndTargetPairs) {
  // z-lab's Qwen3.6-27B drafter ([S,S,S,S,F], flat θ) with the real Qwen3.6-27B layout (nested θ
  // under text_config.rope_parameters).
  const CheckResult q36 =
      run(pair(kReal / "qwen36-27b-awq-fantasylord",
               config_dir("q36", read(kReal / "specforge-dflash/qwen3.6-27b-dflash.json"))));
  EXPECT_EQ(q36.status, Status::kPass) << q36.message;
  EXPECT_THAT(q36.message, HasSubstr("4 of 5 layers causal"));
  // The same z-lab Qwen3-4B drafter config on a fine-tune re-saved with its embedding trimmed to
  // the tokenizer (vocab 151669): the mask id 151669 lived in the padding rows that were cut.
  const CheckResult trimmed =
      run(pair(kReal / "qwen3-4b-hf",
               config_dir("q3", read(kReal / "specforge-dflash/qwen3-4b-dflash.json"))));
  EXPECT_EQ(trimmed.status, Status::kFail);
  EXPECT_THAT(trimmed.message, HasSubstr("dflash_config.mask_token_id 151669 is outside the "
                                         "target's embedding rows 0..151668"));
  EXPECT_THAT(trimmed.message,
              HasSubstr("vocab_size 151936 but the target's vocab_size is 151669"));
}

TEST(DrafterConfigCheck, WithoutATargetJudgesTheDrafterAlone) {
  // SpecForge's LongCat-Flash config uses its own EOS (2) as the mask id.
  Artifacts a;
  a.drafter = config_dir("longcat", read(kReal / "specforge-dflash/longcat-flash-dflash.json"));
  const CheckResult r = run(a);
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_THAT(r.message,
              HasSubstr("dflash_config.mask_token_id 2 equals drafter config.json: eos_token_id"));
  EXPECT_THAT(r.evidence["not_checked"].dump(), HasSubstr("no --target"));
  EXPECT_EQ(run(Artifacts{}).status, Status::kSkip);
}

struct Mistake {
  std::string name;
  std::string target;  // fixture target directory name
  std::function<void(json&)> edit;
  std::string message;  // what the failure must say
  json relax;           // the parameters that accept it
};

std::vector<Mistake> mistakes() {
  const char* q3 = "qwen3-target";
  const char* q35 = "qwen35-target";
  return {
      {"mask_missing",
       q3,
       [](json& j) { j["dflash_config"].erase("mask_token_id"); },
       "dflash_config.mask_token_id is missing",
       {{"allow_missing_mask_token_id", true}}},
      {"mask_outside",
       q3,
       [](json& j) { j["dflash_config"]["mask_token_id"] = 64; },
       "dflash_config.mask_token_id 64 is outside the target's embedding rows 0..63",
       {{"allow_mask_outside_embedding", true}}},
      {"mask_is_target_pad",
       "qwen35-target-with-pad",
       [](json&) {},
       "dflash_config.mask_token_id 63 equals target config.json: text_config.pad_token_id",
       {{"allow_special_mask_token_id", true}}},
      {"mask_is_generation_eos",
       "qwen3-target-with-generation-config",
       [](json& j) { j["dflash_config"]["mask_token_id"] = 5; },
       "dflash_config.mask_token_id 5 equals target generation_config.json: eos_token_id",
       {{"allow_special_mask_token_id", true}}},
      {"taps_missing",
       q3,
       [](json& j) { j["dflash_config"].erase("target_layer_ids"); },
       "dflash_config.target_layer_ids is missing",
       {{"allow_missing_target_layer_ids", true}}},
      {"taps_repeated",
       q3,
       [](json& j) {
         j["dflash_config"]["target_layer_ids"] = {0, 0};
       },
       "dflash_config.target_layer_ids [0,0] lists a layer twice",
       {{"allow_repeated_taps", true}}},
      {"tap_final",
       q35,
       [](json& j) {
         j["dflash_config"]["target_layer_ids"] = {0, 3};
       },
       "dflash_config.target_layer_ids: 3 is the target's final layer",
       {{"allow_final_layer", true}}},
      {"layers_missing",
       q3,
       [](json& j) { j.erase("num_target_layers"); },
       "num_target_layers is missing",
       {{"allow_missing_num_target_layers", true}}},
      {"layers_other_target",
       q35,
       [](json& j) { j["num_target_layers"] = 32; },
       "num_target_layers 32 but the target's text_config.num_hidden_layers is 4",
       {{"allow_layer_count_mismatch", true}}},
      {"hidden",
       q3,
       [](json& j) { j["hidden_size"] = 32; },
       "hidden_size 32 but the target's hidden_size is 64",
       {{"allow_shape_mismatch", true}}},
      {"vocab",
       q35,
       [](json& j) { j["vocab_size"] = 100; },
       "vocab_size 100 but the target's text_config.vocab_size is 64",
       {{"allow_shape_mismatch", true}}},
      {"theta_missing",
       q3,
       [](json& j) { j.erase("rope_theta"); },
       "rope_theta is missing",
       {{"allow_missing_rope_theta", true}}},
      {"theta_100x",
       q3,
       [](json& j) { j["rope_theta"] = 10000.0; },
       "rope_theta 10000 is 100× off the target's 1e+06",
       {{"rope_theta_max_ratio", 100}}},
      {"theta_100x_nested_target",
       q35,
       [](json& j) { j["rope_theta"] = 1e5; },
       "rope_theta 100000 is 100× off the target's 1e+07",
       {{"rope_theta_max_ratio", 100}}},
      {"theta_flat_vs_nested",
       q3,
       [](json& j) {
         j["rope_parameters"] = {{"rope_theta", 1e4}, {"rope_type", "default"}};
       },
       "drafter rope_theta = 1e+06 but rope_parameters.rope_theta = 10000",
       {{"allow_ambiguous_rope_theta", true}, {"rope_theta_max_ratio", 100}}},
      {"rope_type",
       q3,
       [](json& j) {
         j["rope_parameters"] = {{"rope_theta", 1e6}, {"rope_type", "yarn"}};
       },
       "RoPE type \"yarn\" but the target's is \"default\"",
       {{"allow_rope_type_mismatch", true}}},
      {"causal_ambiguous",
       q3,
       [](json& j) { j["dflash_config"]["causal"] = true; },
       "z-lab and SGLang run 0 full non-causal, 1 full non-causal, vLLM runs 0 full causal, 1 "
       "full causal",
       {{"allow_ambiguous_causality", true}}},
      {"fp16",
       q3,
       [](json& j) { j["torch_dtype"] = "float16"; },
       "torch_dtype = \"float16\"",
       {{"allow_float16", true}}},
  };
}

// Targets with special ids: the Qwen3.5 fixture with text_config.pad_token_id = 63, the Qwen3
// fixture with a generation_config.json naming EOS ids [0, 5].
fs::path target_dir(const std::string& name) {
  if (name == "qwen35-target-with-pad") {
    json c = read(kTrained / "qwen35-target/config.json");
    c["text_config"]["pad_token_id"] = 63;
    return config_dir("target_pad", c);
  }
  if (name == "qwen3-target-with-generation-config") {
    const fs::path dir =
        config_dir("target_generation", read(kTrained / "qwen3-target/config.json"));
    testing::write_file(dir / "generation_config.json", R"({"eos_token_id": [0, 5]})");
    return dir;
  }
  return kTrained / name;
}

TEST(DrafterConfigCheck, FailsOneVariantPerMistakeAndEachRuleRelaxes) {
  const json reference = read(kTrained / "qwen3-drafter-reference/config.json");
  for (const Mistake& m : mistakes()) {
    json config = reference;
    m.edit(config);
    const Artifacts a = pair(target_dir(m.target), config_dir(m.name, config));
    const CheckResult bad = run(a);
    EXPECT_EQ(bad.status, Status::kFail) << m.name << ": " << bad.message;
    EXPECT_THAT(bad.message, HasSubstr(m.message)) << m.name;
    const CheckResult relaxed = run(a, m.relax);
    EXPECT_EQ(relaxed.status, Status::kPass)
        << m.name << " with " << m.relax.dump() << ": " << relaxed.message;
  }
}

TEST(DrafterConfigCheck, RulesThatPassWhenTheConfigIsRight) {
  const json reference = read(kTrained / "qwen3-drafter-reference/config.json");
  const fs::path target = kTrained / "qwen3-target";
  auto verdict = [&](const std::string& name, const std::function<void(json&)>& edit,
                     const json& params = nullptr) {
    json config = reference;
    edit(config);
    return run(pair(target, config_dir(name, config)), params);
  };
  // θ only under rope_parameters (the transformers v5 layout).
  const CheckResult nested = verdict("nested_theta", [](json& j) {
    j.erase("rope_theta");
    j["rope_parameters"] = {{"rope_theta", 1e6}, {"rope_type", "default"}};
  });
  EXPECT_EQ(nested.status, Status::kPass) << nested.message;
  EXPECT_EQ(nested.measured["rope_theta"], 1e6);
  // The reference concatenates taps in list order, vLLM in layer order: unsorted taps fail unless
  // the suite says the drafter runs in z-lab's code only.
  auto unsorted = [](json& j) { j["dflash_config"]["target_layer_ids"] = {2, 0}; };
  const CheckResult unsorted_verdict = verdict("unsorted", unsorted);
  EXPECT_EQ(unsorted_verdict.status, Status::kFail);
  EXPECT_THAT(unsorted_verdict.message,
              HasSubstr("[2,0] is not ascending: the z-lab reference concatenates the taps' "
                        "states for fc in list order, vLLM in layer order"));
  EXPECT_EQ(verdict("unsorted_allowed", unsorted, {{"require_sorted_taps", false}}).status,
            Status::kPass);
  // dflash_config.causal that agrees with the z-lab reading, or an explicit is_causal: no
  // ambiguity.
  const CheckResult explicit_causal = verdict("explicit_causal", [](json& j) {
    j["is_causal"] = false;
    j["dflash_config"]["causal"] = true;
  });
  EXPECT_EQ(explicit_causal.status, Status::kPass) << explicit_causal.message;
  EXPECT_THAT(explicit_causal.message, HasSubstr("is_causal = false for every layer"));
  // Sliding layers without is_causal: derived and stated.
  const CheckResult sliding = verdict("sliding", [](json& j) {
    j["layer_types"] = {"sliding_attention", "full_attention"};
    j["sliding_window"] = 16;
    j["use_sliding_window"] = true;
  });
  EXPECT_EQ(sliding.status, Status::kPass) << sliding.message;
  EXPECT_EQ(sliding.measured["layer_causality"],
            json::parse(R"([{"type": "sliding_attention", "causal": true},
                            {"type": "full_attention", "causal": false}])"));
  EXPECT_THAT(sliding.message, HasSubstr("1 of 2 layers causal"));
  // A bf16 drafter passes; the rule is about fp16 only. The verdict says which dtype engines run
  // it in (it said "dtype explicit" of a config without one).
  const CheckResult bf16 = verdict("bf16", [](json& j) { j["dtype"] = "bfloat16"; });
  EXPECT_EQ(bf16.status, Status::kPass);
  EXPECT_THAT(bf16.message, HasSubstr("; dtype = \"bfloat16\""));
  const CheckResult undeclared = verdict("no_dtype", [](json& j) {
    j.erase("torch_dtype");
    j.erase("dtype");
  });
  EXPECT_EQ(undeclared.status, Status::kPass);
  EXPECT_THAT(undeclared.message,
              HasSubstr("no torch_dtype / dtype: engines run it in the target's"));
}

}  // namespace
}  // namespace draftgate::checks

namespace draftgate::checks {
namespace {

// The keys the evaluators refuse are the check's problems too, one each, with the engines'
// disagreement on use_swa / swa_window_size named with both readings.
TEST(DrafterConfigCheck, ListsEveryRefusedKeyAndEngineDisagreement) {
  json c = read(kTrained / "qwen3-drafter-reference/config.json");
  c["dflash_config"]["projector_type"] = "gru";
  c["dflash_config"]["sample_from_anchor"] = true;
  const fs::path dir = config_dir("refused", c);
  testing::write_file(dir / "mask_embedding.pt", "x");
  const CheckResult r = run(pair(kTrained / "qwen3-target", dir));
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.measured["refused_keys"],
            json::parse(R"(["dflash_config.projector_type", "dflash_config.sample_from_anchor",
                            "mask_embedding.pt"])"));
  EXPECT_THAT(r.message, HasSubstr("refused dflash_config.projector_type = \"gru\""));
  EXPECT_THAT(r.message, HasSubstr("refused dflash_config.sample_from_anchor = true"));
  EXPECT_THAT(r.message, HasSubstr("refused mask_embedding.pt"));

  json swa = read(kTrained / "qwen3-drafter-reference/config.json");
  swa["dflash_config"]["use_swa"] = true;
  swa["dflash_config"]["swa_window_size"] = 4;
  const CheckResult s = run(pair(kTrained / "qwen3-target", config_dir("swa", swa)));
  EXPECT_EQ(s.status, Status::kFail);
  EXPECT_THAT(s.message, HasSubstr("z-lab and SGLang run 0 full non-causal, 1 full non-causal, "
                                   "vLLM runs 0 sliding(4) non-causal, 1 sliding(4) non-causal"));
  EXPECT_EQ(s.measured["layer_windows_vllm"], json::parse("[4, 4]"));
  EXPECT_EQ(run(pair(kTrained / "qwen3-target", config_dir("swa2", swa)),
                {{"allow_ambiguous_causality", true}})
                .status,
            Status::kPass);
}

}  // namespace
}  // namespace draftgate::checks
