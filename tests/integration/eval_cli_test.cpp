// `draftgate eval` end to end on random checkpoints: JSON report, oracle self-test, determinism,
// bad input.

#include <ATen/Context.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "run_cli.h"
#include "synthetic_layouts.h"

namespace draftgate {
namespace {

using ::testing::HasSubstr;
using testing::run_draftgate;
namespace fs = std::filesystem;

struct Setup {
  fs::path dir, target, drafter, prompts;
};

const Setup& setup() {
  static const Setup s = [] {
    Setup x;
    x.dir = testing::fresh_dir("eval_cli");
    x.target = x.dir / "target";
    x.drafter = x.dir / "drafter";
    x.prompts = x.dir / "prompts.jsonl";
    EXPECT_EQ(
        run_draftgate("make-target --family qwen3_5 --seed 5 --out " + x.target.string()).exit_code,
        0);
    EXPECT_EQ(run_draftgate("make-drafter --target " + x.target.string() +
                            " --taps 0,2 --block-size 6 --out " + x.drafter.string())
                  .exit_code,
              0);
    std::ofstream(x.prompts)
        << "{\"id\": \"p1\", \"input_ids\": [5, 9, 13, 2]}\n"
        << "{\"id\": \"p2\", \"input_ids\": [100, 7, 7, 31, 8, 1], \"task\": \"demo\"}\n";
    return x;
  }();
  return s;
}

nlohmann::json eval_json(const std::string& flags, const std::string& name, int max_new = 24) {
  const fs::path out = setup().dir / (name + ".json");
  const auto r = run_draftgate("eval --target " + setup().target.string() + " --prompts " +
                               setup().prompts.string() + " --max-new " + std::to_string(max_new) +
                               " " + flags + " --json " + out.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(std::ifstream(out));
}

TEST(EvalCli, ReportsTauWithEveryField) {
  const fs::path out = setup().dir / "report.json";
  const auto r = run_draftgate("eval --target " + setup().target.string() + " --drafter " +
                               setup().drafter.string() + " --prompts " + setup().prompts.string() +
                               " --max-new 24 --json " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("tau           macro "));
  const auto report = nlohmann::json::parse(std::ifstream(out));
  for (const char* key :
       {"tau_macro", "tau_pooled", "histogram", "per_position_acceptance", "per_prompt", "steps",
        "drafted", "prompt_set_sha256", "decoding", "timing"})
    EXPECT_TRUE(report.contains(key)) << key;
  EXPECT_EQ(report["decoding"]["block_size"], 6);
  EXPECT_EQ(report["per_prompt"].size(), 2u);
  EXPECT_EQ(report["per_prompt"][0]["generated_tokens"], 24);
  EXPECT_GE(report["tau_macro"].get<double>(), 1.0);
  EXPECT_EQ(report["per_position_acceptance"].size(), 5u);
}

// Each drafter layer's causality inside the block is shown and recorded; a config whose
// dflash_config.causal z-lab and vLLM read differently gets a note, and --causality picks.
TEST(EvalCli, StatesEachDrafterLayersCausalityAndTheReading) {
  const auto plain = eval_json("--drafter " + setup().drafter.string(), "causality_plain");
  EXPECT_EQ(plain["decoding"]["causality"], "zlab");
  EXPECT_EQ(plain["decoding"]["drafter_causal"], nlohmann::json::parse("[false, false]"));

  const fs::path ambiguous = setup().dir / "drafter_dflash_causal";
  fs::copy(setup().drafter, ambiguous, fs::copy_options::recursive);
  auto config = nlohmann::json::parse(std::ifstream(ambiguous / "config.json"));
  config["dflash_config"]["causal"] = true;
  std::ofstream(ambiguous / "config.json") << config.dump(2);
  const std::string run = "eval --target " + setup().target.string() + " --drafter " +
                          ambiguous.string() + " --prompts " + setup().prompts.string() +
                          " --max-new 8";
  const auto zlab = run_draftgate(run);
  ASSERT_EQ(zlab.exit_code, 0) << zlab.err;
  EXPECT_THAT(zlab.err, HasSubstr("note: "));
  EXPECT_THAT(zlab.err, HasSubstr("z-lab and SGLang run 0 full non-causal, 1 full non-causal; "
                                  "vLLM (dflash_config.causal / use_swa / swa_window_size) runs "
                                  "0 full causal, 1 full causal; using z-lab's reading "
                                  "(--causality vllm applies vLLM's)"));
  EXPECT_THAT(zlab.out, HasSubstr("drafter layers 0 full non-causal, 1 full non-causal (is_causal "
                                  "absent: sliding layers causal, full layers not)"));
  const auto vllm = run_draftgate(run + " --causality vllm");
  ASSERT_EQ(vllm.exit_code, 0) << vllm.err;
  EXPECT_THAT(vllm.err, HasSubstr("using vLLM's reading (--causality zlab applies z-lab's)"));
  EXPECT_THAT(vllm.out, HasSubstr("drafter layers 0 full causal, 1 full causal "
                                  "(dflash_config.causal, vLLM reading)"));
  const auto as_vllm =
      eval_json("--drafter " + ambiguous.string() + " --causality vllm", "causality_vllm");
  EXPECT_EQ(as_vllm["decoding"]["causality"], "vllm");
  EXPECT_EQ(as_vllm["decoding"]["drafter_causal"], nlohmann::json::parse("[true, true]"));
  EXPECT_NE(run_draftgate(run + " --causality hf").exit_code, 0);
}

TEST(EvalCli, OracleGivesTauEqualToTheBlockSize) {
  // float32: bf16 logits are bf16-quantised (as in transformers), so exact ties can flip a greedy
  // token between block verification and token-by-token decoding and knock the oracle out of step.
  // 25 new tokens: the prefill's, then four full blocks of 6.
  const auto j = eval_json("--oracle --block-size 6 --dtype f32", "oracle", 25);
  EXPECT_DOUBLE_EQ(j["tau_macro"].get<double>(), 6.0);
  EXPECT_DOUBLE_EQ(j["tau_pooled"].get<double>(), 6.0);
  EXPECT_EQ(j["drafter"], "oracle");
  EXPECT_EQ(j["histogram"]["6"], j["steps"]);
}

TEST(EvalCli, TheLastStepCountsWhatItCommitsAsTheReference) {
  // 24 new tokens: after three full blocks 5 are still wanted, so the last block has 6 rows (the
  // anchor + 5 drafts) and the step commits 5 — the z-lab reference records 5, not 6.
  const auto j = eval_json("--oracle --block-size 6 --dtype f32 --record-drafts", "oracle_tail");
  for (const auto& p : j["per_prompt"]) {
    EXPECT_EQ(p["acceptance"], nlohmann::json({6, 6, 6, 5})) << p["id"];
    EXPECT_EQ(p["generated_tokens"], 24) << p["id"];
  }
  // 23 new tokens: the last block is shortened to the anchor + 4 drafts.
  const auto k =
      eval_json("--oracle --block-size 6 --dtype f32 --record-drafts", "oracle_short", 23);
  for (const auto& p : k["per_prompt"]) {
    EXPECT_EQ(p["acceptance"], nlohmann::json({6, 6, 6, 4})) << p["id"];
    EXPECT_EQ(p["drafts"].back().size(), 4u) << p["id"];
    EXPECT_EQ(p["drafted"], 3 * 5 + 4) << p["id"];
  }
  EXPECT_DOUBLE_EQ(k["tau_pooled"].get<double>(), 22.0 / 4.0);
  // An EOS inside the second block's accepted drafts: the step counts up to and including it.
  const auto& first = j["per_prompt"][0];
  const auto out = first["output_ids"].get<std::vector<std::int64_t>>();
  std::size_t eos_at = 7;  // step 2 commits outputs 7..12
  while (eos_at < 12 && std::find(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(eos_at),
                                  out[eos_at]) != out.begin() + static_cast<std::ptrdiff_t>(eos_at))
    ++eos_at;
  ASSERT_LT(eos_at, 12u) << "no fresh token in the second block to stop at";
  const auto e = eval_json(
      "--oracle --block-size 6 --dtype f32 --eos " + std::to_string(out[eos_at]), "oracle_eos");
  const auto& stopped = e["per_prompt"][0];
  EXPECT_EQ(stopped["acceptance"], nlohmann::json({6, static_cast<int>(eos_at) - 6}));
  EXPECT_EQ(stopped["generated_tokens"], eos_at + 1);
}

TEST(EvalCli, DeterministicAcrossRunsAndThreadCounts) {
  std::vector<nlohmann::json> reports;
  for (const std::string threads : {"1", "2", "2"}) {
    const fs::path out = setup().dir / ("det" + threads + std::to_string(reports.size()) + ".json");
    const auto r = run_draftgate(
        "--threads " + threads + " eval --target " + setup().target.string() + " --drafter " +
        setup().drafter.string() + " --prompts " + setup().prompts.string() +
        " --max-new 20 --tree-budget 8 --json " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(std::ifstream(out));
    j.erase("timing");
    reports.push_back(j);
  }
  EXPECT_EQ(reports[0], reports[1]);
  EXPECT_EQ(reports[1], reports[2]);
}

TEST(EvalCli, BadInputExitsTwo) {
  const std::string base =
      "eval --target " + setup().target.string() + " --prompts " + setup().prompts.string();
  auto r = run_draftgate(base);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("give exactly one of --drafter DIR and --oracle"));
  r = run_draftgate(base + " --oracle --drafter " + setup().drafter.string());
  EXPECT_EQ(r.exit_code, 2);

  const fs::path bad_prompts = setup().dir / "bad.jsonl";
  std::ofstream(bad_prompts) << "{\"id\": \"x\", \"input_ids\": [1, 999]}\n";
  r = run_draftgate("eval --target " + setup().target.string() + " --oracle --prompts " +
                    bad_prompts.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err,
              HasSubstr("prompt \"x\" holds token 999 outside the target's vocabulary (256)"));

  // A drafter whose config taps a layer the target lacks (make-drafter refuses to write one).
  const fs::path other = setup().dir / "other-drafter";
  ASSERT_EQ(run_draftgate("make-drafter --target " + setup().target.string() +
                          " --taps 0,2 --out " + other.string())
                .exit_code,
            0);
  nlohmann::json config = nlohmann::json::parse(std::ifstream(other / "config.json"));
  config["dflash_config"]["target_layer_ids"] = {0, 9};
  std::ofstream(other / "config.json") << config.dump();
  r = run_draftgate(base + " --drafter " + other.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("tap 9 is not a target layer (0..3)"));
}

// --device: cpu decodes (and says so); a CUDA device on a CPU libtorch, or a malformed one, is one
// line naming the flag. Goldens and min_tau take the same names (GoldenSuiteCli).
TEST(EvalCli, DeviceFlag) {
  const std::string base = "eval --target " + setup().target.string() + " --drafter " +
                           setup().drafter.string() + " --prompts " + setup().prompts.string() +
                           " --max-new 8";
  auto r = run_draftgate(base + " --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(", device cpu"));
  r = run_draftgate(base + " --device cuda:x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "draftgate: error: --device: unknown device \"cuda:x\" (expected cpu or cuda[:N])\n");
  if (at::hasCUDA()) GTEST_SKIP() << "this libtorch has CUDA: the refusal below does not apply";
  r = run_draftgate(base + " --device cuda");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_THAT(r.err,
              HasSubstr("--device: \"cuda\" requested but this libtorch was built without CUDA"));
}

}  // namespace
}  // namespace draftgate
