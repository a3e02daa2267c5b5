// speculators DFlash drafters end to end: a speculators conversion of the bundled z-lab reference
// drafter (written as speculators' DFlashConverter writes it) gives exactly the z-lab drafter's τ
// and drafts; a reduced-vocabulary one drafts only kept target ids; probe and the drafter_config
// check read it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "fixture_paths.h"
#include "run_cli.h"
#include "speculators_convert.h"
#include "test_files.h"

namespace draftgate {
namespace {

using testing::kTrained;

using ::testing::HasSubstr;
using testing::run_draftgate;
namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kReference = kTrained / "qwen3-drafter-reference";
const fs::path kTarget = kTrained / "qwen3-target";

json eval_report(const fs::path& drafter, const fs::path& out) {
  const auto r =
      run_draftgate("eval --target " + kTarget.string() + " --drafter " + drafter.string() +
                    " --prompts " + (kTrained / "prompts/held-out.jsonl").string() +
                    " --max-new 24 --record-drafts --json " + out.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(std::ifstream(out));
}

TEST(SpeculatorsCli, ConversionOfTheZLabDrafterGivesExactlyItsTauAndDrafts) {
  const fs::path dir = testing::fresh_dir("speculators_cli_twin");
  testing::write_speculators_drafter(kReference, kTarget, dir / "spec");
  const json z = eval_report(kReference, dir / "zlab.json");
  const json s = eval_report(dir / "spec", dir / "spec.json");
  ASSERT_GT(z["steps"].get<std::int64_t>(), 0);
  for (const char* key : {"tau_macro", "tau_pooled", "histogram", "per_position_acceptance",
                          "steps", "drafted", "accepted", "generated_tokens"})
    EXPECT_EQ(s[key], z[key]) << key;  // bitwise: JSON numbers round-trip doubles exactly
  ASSERT_EQ(s["per_prompt"].size(), z["per_prompt"].size());
  for (std::size_t i = 0; i < z["per_prompt"].size(); ++i) {
    const json &a = z["per_prompt"][i], &b = s["per_prompt"][i];
    EXPECT_EQ(b["id"], a["id"]);
    EXPECT_EQ(b["acceptance"], a["acceptance"]) << a["id"];
    EXPECT_EQ(b["output_ids"], a["output_ids"]) << a["id"];
    ASSERT_TRUE(a.contains("drafts"));
    EXPECT_EQ(b["drafts"], a["drafts"]) << a["id"];
  }
}

TEST(SpeculatorsCli, ReducedVocabularyDraftsOnlyKeptTargetIds) {
  const fs::path dir = testing::fresh_dir("speculators_cli_reduced");
  std::vector<std::int64_t> kept;
  for (std::int64_t id = 0; id < 40; ++id) kept.push_back(id);
  for (std::int64_t id : {45, 50, 57, 63}) kept.push_back(id);
  testing::write_speculators_drafter(kReference, kTarget, dir / "spec", kept);
  const json s = eval_report(dir / "spec", dir / "spec.json");
  const json z = eval_report(kReference, dir / "zlab.json");
  std::int64_t drafted = 0, outside_of_z = 0;
  for (std::size_t p = 0; p < s["per_prompt"].size(); ++p) {
    // Verification keeps the output the target's greedy decode whatever the drafts.
    EXPECT_EQ(s["per_prompt"][p]["output_ids"], z["per_prompt"][p]["output_ids"]);
    for (const auto& step : s["per_prompt"][p]["drafts"])
      for (const auto& id : step) {
        ++drafted;
        EXPECT_NE(std::find(kept.begin(), kept.end(), id.get<std::int64_t>()), kept.end()) << id;
      }
    for (const auto& step : z["per_prompt"][p]["drafts"])
      for (const auto& id : step)
        if (std::find(kept.begin(), kept.end(), id.get<std::int64_t>()) == kept.end())
          ++outside_of_z;
  }
  EXPECT_GT(drafted, 0);
  EXPECT_GT(outside_of_z, 0) << "the z-lab twin must draft ids the reduced vocabulary lacks";
}

// The step-record checks take a speculators drafter like its z-lab twin; a reduced-vocabulary one
// is not judged in training mode, and the report says why (never a verdict on -inf logits).
TEST(SpeculatorsCli, TrainInferConsistencyJudgesTheTwinAndSaysWhyNotAReducedVocabulary) {
  const fs::path dir = testing::fresh_dir("speculators_cli_record");
  testing::write_speculators_drafter(kReference, kTarget, dir / "twin");
  std::vector<std::int64_t> kept;
  for (std::int64_t id = 0; id < 40; ++id) kept.push_back(id);
  testing::write_speculators_drafter(kReference, kTarget, dir / "reduced", kept);
  const auto run = [&](const std::string& drafter) {
    const auto r = run_draftgate(
        "check --only loss_type,train_infer_consistency --target " + kTarget.string() +
        " --drafter " + (dir / drafter).string() + " --step-record " +
        (kTrained / "step-records/qwen3-drafter-reference.safetensors").string() + " --report " +
        (dir / (drafter + ".json")).string());
    const fs::path report = dir / (drafter + ".json");
    EXPECT_TRUE(fs::exists(report)) << r.out << r.err;
    json verdicts = json::object();
    const json parsed = fs::exists(report) ? json::parse(std::ifstream(report)) : json::object();
    for (const auto& result : parsed.value("results", json::array()))
      verdicts[result["check"].get<std::string>()] = result;
    return std::make_pair(r, verdicts.value("train_infer_consistency", json::object()));
  };
  const auto [twin_run, twin] = run("twin");
  EXPECT_EQ(twin_run.exit_code, 0) << twin_run.out << twin_run.err;
  EXPECT_EQ(twin["status"], "pass") << twin["message"];
  const auto [reduced_run, reduced] = run("reduced");
  EXPECT_EQ(reduced_run.exit_code, 0) << reduced_run.out << reduced_run.err;
  EXPECT_EQ(reduced["status"], "skip");
  EXPECT_THAT(reduced["message"].get<std::string>(),
              HasSubstr("reduced vocabulary (draft_vocab_size 40 of the target's"));
}

// What loading refuses and the headers show fails the structural pre-flight too: a reduced
// vocabulary whose d2t / lm_head hold fewer rows than draft_vocab_size passed it, then `eval`
// refused the drafter.
TEST(SpeculatorsCli, TheStructuralChecksRefuseShapesLoadingRefuses) {
  const fs::path dir = testing::fresh_dir("speculators_cli_shapes");
  std::vector<std::int64_t> kept;
  for (std::int64_t id = 0; id < 40; ++id) kept.push_back(id);
  testing::write_speculators_drafter(kReference, kTarget, dir / "reduced", kept);
  const std::string check = "check --only fc_excludes_target_layer --target " + kTarget.string() +
                            " --drafter " + (dir / "reduced").string();
  const auto good = run_draftgate(check);
  EXPECT_EQ(good.exit_code, 0) << good.out << good.err;
  json config = json::parse(std::ifstream(dir / "reduced" / "config.json"));
  config["draft_vocab_size"] = 41;
  std::ofstream(dir / "reduced" / "config.json") << config.dump(2);
  const auto bad = run_draftgate(check);
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_THAT(bad.err,
              ::testing::AnyOf(HasSubstr("tensor \"d2t\" has shape [40], config implies [41]"),
                               HasSubstr("tensor \"lm_head.weight\" has shape [40, ")));
  const auto eval = run_draftgate("eval --target " + kTarget.string() + " --drafter " +
                                  (dir / "reduced").string() + " --prompts " +
                                  (kTrained / "prompts/held-out.jsonl").string() +
                                  " --max-new 4 --json " + (dir / "eval.json").string());
  EXPECT_EQ(eval.exit_code, 2) << eval.out << eval.err;
}

// A speculators drafter names the target it was trained against (speculators_config.verifier.
// name_or_path): against another local target it is refused by name, as _name_or_path is (it
// passed drafter_config and min_tau blamed training).
TEST(SpeculatorsCli, ADrafterConvertedForAnotherTargetIsRefusedByItsVerifier) {
  const fs::path dir = testing::fresh_dir("speculators_cli_verifier");
  testing::write_speculators_drafter(kReference, kTarget, dir / "spec");
  const fs::path other = kTrained / "qwen35-target";
  const auto r = run_draftgate("check --only drafter_config --target " + other.string() +
                               " --drafter " + (dir / "spec").string());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("this drafter's config was generated from the target " +
                               kTarget.string() + " (speculators_config.verifier.name_or_path)"));
  const auto own = run_draftgate("check --only drafter_config --target " + kTarget.string() +
                                 " --drafter " + (dir / "spec").string());
  EXPECT_EQ(own.exit_code, 0) << own.out << own.err;
}

TEST(SpeculatorsCli, ProbeAndTheDrafterConfigCheckReadIt) {
  const fs::path dir = testing::fresh_dir("speculators_cli_probe");
  testing::write_speculators_drafter(kReference, kTarget, dir / "spec");
  const auto p = run_draftgate("probe " + (dir / "spec").string() + " --json");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const json j = json::parse(p.out);
  EXPECT_EQ(j["format"], "speculators");
  EXPECT_EQ(j["read"], true);
  EXPECT_EQ(j["refused"], json::array());
  EXPECT_EQ(j["taps_zlab"], json::parse("[0, 2]"));
  EXPECT_EQ(j["taps_as_written"]["ids"], json::parse("[1, 3]"));
  EXPECT_EQ(j["layers"]["vllm"].size(), 2u);
  const auto text = run_draftgate("probe " + (dir / "spec").string());
  EXPECT_THAT(text.out, HasSubstr("read natively as vLLM reads it"));
  const auto c = run_draftgate("check --only drafter_config --target " + kTarget.string() +
                               " --drafter " + (dir / "spec").string());
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
}

}  // namespace
}  // namespace draftgate
