// `draftgate golden record` and `draftgate check --golden / --suite` end to end on the bundled
// trained Qwen3 fixture: atomic, refuse-to-overwrite goldens; min_tau against them; suite files
// with relative paths and expected verdicts; bad goldens and suites are exit 2 with one line.

#include <ATen/Context.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "draftgate/golden/golden.h"
#include "fixture_paths.h"
#include "run_cli.h"
#include "synthetic_layouts.h"

namespace draftgate {
namespace {

using testing::kTrained;

using ::testing::HasSubstr;
using testing::run_draftgate;
namespace fs = std::filesystem;

const std::string& record_args() {
  static const std::string args = " --target " + (kTrained / "qwen3-target").string() +
                                  " --drafter " + (kTrained / "qwen3-drafter-reference").string() +
                                  " --prompts " + (kTrained / "prompts/held-out.jsonl").string() +
                                  " --max-new 16 --eos 0";
  return args;
}

TEST(GoldenCli, RecordsRefusesToOverwriteAndMinTauReadsIt) {
  const fs::path dir = testing::fresh_dir("golden_cli");
  const fs::path out = dir / "qwen3.json";
  auto r = run_draftgate("golden record" + record_args() + " --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const golden::Golden g = golden::read_golden(out);
  EXPECT_EQ(g.layout_prefix, "model.layers");
  EXPECT_EQ(g.taps, (std::vector<std::int64_t>{0, 2}));
  EXPECT_GT(g.tau_macro, 1.5);
  EXPECT_TRUE(fs::exists(g.prompt_set)) << "the prompt path is relative to the golden file";
  const nlohmann::json doc = nlohmann::json::parse(testing::read_file(out));
  EXPECT_EQ(doc["provenance"]["target"]["files"]["model.safetensors"].get<std::string>().size(),
            64u);
  EXPECT_EQ(doc["check_params"]["loss_type"]["expected"], "ce");
  EXPECT_EQ(doc["provenance"]["device"], "cpu");
  EXPECT_EQ(g.causality, "zlab");
  EXPECT_EQ(g.drafter_causal, (std::vector<bool>{false, false})) << "full layers, is_causal absent";

  const std::string before = testing::read_file(out);
  r = run_draftgate("golden record" + record_args() + " --out " + out.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("refusing to overwrite"));
  EXPECT_EQ(testing::read_file(out), before);
  EXPECT_EQ(run_draftgate("golden record" + record_args() + " --out " + out.string() + " --force")
                .exit_code,
            0);

  const std::string check = "check --only min_tau,layer_path,fc_excludes_target_layer --target " +
                            (kTrained / "qwen3-target").string() + " --drafter " +
                            (kTrained / "qwen3-drafter-reference").string() + " --golden ";
  r = run_draftgate(check + out.string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("ratio 1)"));

  if (!at::hasCUDA()) {  // a CUDA device on a CPU libtorch: one line naming the flag / parameter
    r = run_draftgate(check + out.string() + " --param min_tau.device=\"cuda\"");
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_THAT(r.err, HasSubstr("min_tau.device: \"cuda\" requested but this libtorch was built "
                                 "without CUDA"));
    r = run_draftgate("golden record" + record_args() + " --out " + (dir / "cuda.json").string() +
                      " --device cuda");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, HasSubstr("--device: \"cuda\" requested"));
    EXPECT_FALSE(fs::exists(dir / "cuda.json"));
  }

  nlohmann::json edited = doc;
  edited["prompt_set"]["sha256"] = std::string(64, '0');
  std::ofstream(dir / "other_prompts.json") << edited.dump();
  r = run_draftgate(check + (dir / "other_prompts.json").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("differs from the golden's"));

  // A golden whose reference attended otherwise: τ would compare different attention.
  edited = doc;
  edited["decoding"]["drafter_causal"] = {true, true};
  std::ofstream(dir / "other_causality.json") << edited.dump();
  r = run_draftgate(check + (dir / "other_causality.json").string());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("not as the golden's reference did (causal per layer: "
                               "[true,true])"));
  // Goldens recorded before draftgate recorded the causality are read with z-lab's reading.
  edited = doc;
  edited["decoding"].erase("causality");
  edited["decoding"].erase("drafter_causal");
  std::ofstream(dir / "no_causality.json") << edited.dump();
  r = run_draftgate(check + (dir / "no_causality.json").string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  edited["decoding"]["causality"] = "hf";
  edited["decoding"]["drafter_causal"] = {false, false};
  std::ofstream(dir / "bad_causality.json") << edited.dump();
  r = run_draftgate(check + (dir / "bad_causality.json").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown causality reading \"hf\""));

  edited = doc;
  edited["schema"] = "draftgate.golden/0";
  std::ofstream(dir / "old_schema.json") << edited.dump();
  r = run_draftgate(check + (dir / "old_schema.json").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("golden schema \"draftgate.golden/0\""));

  // τ counted the older way (accepted + 1 even past the end) is not comparable: re-record.
  edited = doc;
  edited["decoding"]["tau_definition"] =
      "accepted drafts + 1 per verify step; macro = mean of per-prompt means";
  std::ofstream(dir / "old_count.json") << edited.dump();
  r = run_draftgate(check + (dir / "old_count.json").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("old_count.json: golden τ was counted as \"accepted drafts + 1"));
  EXPECT_THAT(r.err, HasSubstr("--force"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// Decoding keeps the whole target in memory: the default dtype is f32 when it fits half the memory
// budget, else the stored one (bf16 here) — never a refusal on a big target.
TEST(GoldenCli, DtypeDefaultsToWhatFitsTheMemoryBudget) {
  const fs::path dir = testing::fresh_dir("golden_dtype");
  ASSERT_EQ(run_draftgate("make-target --out " + (dir / "target").string()).exit_code, 0);
  ASSERT_EQ(run_draftgate("make-drafter --target " + (dir / "target").string() + " --out " +
                          (dir / "drafter").string())
                .exit_code,
            0);
  const std::string args = "golden record --target " + (dir / "target").string() + " --drafter " +
                           (dir / "drafter").string() + " --prompts " +
                           (kTrained / "prompts/held-out.jsonl").string() +
                           " --max-new 4 --allow-collapsed --out ";
  const auto roomy = run_draftgate(args + (dir / "roomy.json").string());
  ASSERT_EQ(roomy.exit_code, 0) << roomy.err;
  EXPECT_EQ(nlohmann::json::parse(testing::read_file(dir / "roomy.json"))["decoding"]["dtype"],
            "f32");
  const auto tight = testing::run_draftgate_measured(args + (dir / "tight.json").string(),
                                                     "env DRAFTGATE_MEMORY_BUDGET_MIB=1");
  ASSERT_EQ(tight.exit_code, 0) << tight.err;
  EXPECT_EQ(nlohmann::json::parse(testing::read_file(dir / "tight.json"))["decoding"]["dtype"],
            "bf16");
}

TEST(SuiteCli, RelativePathsExpectationsAndBadSuites) {
  const fs::path dir = testing::fresh_dir("suite_cli");
  const std::string rel = fs::relative(kTrained, dir).string();
  auto suite = [&](const std::string& name, const nlohmann::json& expect,
                   const nlohmann::json& checks) {
    nlohmann::json s = {
        {"schema", "draftgate.suite/1"},
        {"artifacts",
         {{"target", rel + "/qwen35-target"},
          {"drafter", rel + "/qwen35-drafter-reference"},
          {"step_record", rel + "/step-records/qwen35-drafter-reference.safetensors"}}},
        {"checks", checks},
        {"expect", expect}};
    std::ofstream(dir / name) << s.dump(2);
    return (dir / name).string();
  };
  const nlohmann::json two = nlohmann::json::array(
      {{{"check", "loss_type"}},
       {{"check", "loss_type"}, {"name", "loss_is_kl"}, {"params", {{"expected", "kl"}}}}});
  const std::string good = suite("good.json", {{"loss_type", "pass"}, {"loss_is_kl", "fail"}}, two);
  auto r = run_draftgate("check --verify-expectations --suite " + good);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("loss_is_kl"));
  r = run_draftgate("check --suite " + good);
  EXPECT_EQ(r.exit_code, 1) << "without --verify-expectations a failing check fails the run";

  const std::string wrong = suite("wrong.json", {{"loss_type", "fail"}}, two);
  r = run_draftgate("check --verify-expectations --suite " + good + " --suite " + wrong);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("verdicts"));
  EXPECT_THAT(r.out, HasSubstr("pass!"));

  const std::string unknown =
      suite("unknown.json", nlohmann::json::object(), {{{"check", "no_such_check"}}});
  r = run_draftgate("check --suite " + unknown);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown check \"no_such_check\""));
}

}  // namespace
}  // namespace draftgate
