// Each check proven both ways: it passes on the reference artifacts and fails on the artifact with
// its bug.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "checks/check.h"
#include "checks/report.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/io/tensor_view.h"
#include "draftgate/model/random_checkpoint.h"
#include "draftgate/model/target.h"
#include "synthetic_layouts.h"
#include "synthetic_step_record.h"
#include "test_files.h"

namespace draftgate::checks {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

const fs::path kQwen36 =
    fs::path(DRAFTGATE_SOURCE_DIR) / "fixtures/real-layouts/qwen36-27b-awq-fantasylord";

CheckResult run(const std::string& name, const Artifacts& a,
                const nlohmann::json& params = nullptr) {
  const Check* c = find_check(name);
  EXPECT_NE(c, nullptr) << name;
  return run_check(*c, a, params);
}

// A random 4-layer target and drafters with chosen taps, written once.
const fs::path& pair_dir() {
  static const fs::path dir = [] {
    const fs::path d = testing::fresh_dir("checks");
    model::RandomTargetSpec t;
    model::write_random_target(d / "target", t);
    for (const auto& [name, taps] : std::vector<std::pair<std::string, std::vector<std::int64_t>>>{
             {"good", {0, 2}}, {"final", {0, 3}}, {"repeat", {2, 2}}, {"outside", {1, 7}}}) {
      model::RandomDrafterSpec s;
      s.target_layer_ids = taps;
      model::write_random_drafter(d / name, s);
    }
    return d;
  }();
  return dir;
}

Artifacts target_and(const std::string& drafter) {
  Artifacts a;
  a.target = pair_dir() / "target";
  a.drafter = pair_dir() / drafter;
  return a;
}

// The steps of docs/development/adding-a-check.md that live outside the check's own file.
TEST(CheckCatalogue, EveryCheckIsDocumentedGatedAndExpected) {
  const fs::path root = DRAFTGATE_SOURCE_DIR;
  const std::string table = testing::read_file(root / "docs/checks.md");
  const std::string cmake = testing::read_file(root / "tests/CMakeLists.txt");
  const std::string gate_list = cmake.substr(cmake.find("set(DRAFTGATE_GATE_CHECKS"));
  std::string gate = gate_list.substr(0, gate_list.find(')'));
  std::replace(gate.begin(), gate.end(), '\n', ' ');
  for (const Check* check : all_checks()) {
    const std::string name = check->name();
    EXPECT_NE(table.find("| `" + name + "` |"), std::string::npos)
        << name << ": docs/checks.md's check table has no row \"| `" << name << "` |\"";
    EXPECT_NE((gate + " ").find(" " + name + " "), std::string::npos)
        << name << ": not in DRAFTGATE_GATE_CHECKS (tests/CMakeLists.txt)";
    for (const char* suite :
         {"qwen3-reference.json", "qwen35-reference.json", "qwen3-dflash2.json"}) {
      const auto json = nlohmann::json::parse(testing::read_file(root / "fixtures/suites" / suite));
      EXPECT_TRUE(json["expect"].contains(name)) << name << ": expect block of " << suite;
    }
  }
}

TEST(LayerPath, PassesOnTheRealQwen36LayoutAndFailsOnACorruptedOne) {
  Artifacts a;
  a.target = kQwen36;
  const CheckResult ok = run("layer_path", a);
  EXPECT_EQ(ok.status, Status::kPass) << ok.message;
  EXPECT_EQ(ok.measured["decoder_prefix"], "model.language_model.layers");
  // The layout is right; that the engine cannot run int4 weights is evidence, not a layout failure.
  EXPECT_EQ(ok.measured["engine_supported"], false);
  EXPECT_THAT(ok.message, HasSubstr("the engine cannot run this target: quantised weights"));
  EXPECT_EQ(run("layer_path", target_and("good")).measured["engine_supported"], true);

  const fs::path broken = testing::fresh_dir("broken_layout");
  fs::copy(kQwen36 / "model.safetensors.index.json", broken / "model.safetensors.index.json");
  auto config = nlohmann::json::parse(std::ifstream(kQwen36 / "config.json"));
  config["text_config"]["num_hidden_layers"] = 60;
  auto& types = config["text_config"]["layer_types"];
  types.erase(types.begin() + 60, types.end());
  std::ofstream(broken / "config.json") << config.dump();
  a.target = broken;
  const CheckResult bad = run("layer_path", a);
  EXPECT_EQ(bad.status, Status::kFail);
  EXPECT_THAT(bad.message, HasSubstr("count 64 != num_hidden_layers 60"));

  a.target = kQwen36;
  const CheckResult golden = run("layer_path", a, {{"expected_prefix", "model.layers"}});
  EXPECT_EQ(golden.status, Status::kFail);
  EXPECT_THAT(golden.message, HasSubstr("expected decoder prefix \"model.layers\""));
}

TEST(LayerPath, DrafterTapsMustNameTargetLayers) {
  EXPECT_EQ(run("layer_path", target_and("good")).status, Status::kPass);
  const CheckResult r = run("layer_path", target_and("outside"));
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_THAT(r.message, HasSubstr("drafter tap 7 names no target layer"));
}

TEST(FcExcludesTargetLayer, FinalLayerRepeatsAndOptIn) {
  EXPECT_EQ(run("fc_excludes_target_layer", target_and("good")).status, Status::kPass);
  const CheckResult final_tap = run("fc_excludes_target_layer", target_and("final"));
  EXPECT_EQ(final_tap.status, Status::kFail);
  EXPECT_THAT(final_tap.message, HasSubstr("tap 3 is the target's final layer"));
  EXPECT_EQ(
      run("fc_excludes_target_layer", target_and("final"), {{"allow_final_layer", true}}).status,
      Status::kPass);
  EXPECT_THAT(run("fc_excludes_target_layer", target_and("repeat")).message,
              HasSubstr("repeat a layer"));
  Artifacts only_target;
  only_target.target = pair_dir() / "target";
  EXPECT_EQ(run("fc_excludes_target_layer", only_target).status, Status::kSkip);
}

fs::path record(const std::string& name, train::LossType loss,
                const std::function<void(train::StepRecord&)>& edit) {
  train::StepRecord r = testing::training_step(loss);
  edit(r);
  const fs::path p = testing::fresh_dir("loss_type_records") / (name + ".safetensors");
  train::write_step_record(p, r);
  return p;
}

TEST(LossType, CrossEntropyPassesAndKlFailsAndNeitherFails) {
  Artifacts a;
  a.step_record = record("ce", train::LossType::kHardCrossEntropy, [](auto&) {});
  const CheckResult ce = run("loss_type", a);
  EXPECT_EQ(ce.status, Status::kPass) << ce.message;
  EXPECT_EQ(ce.measured["logged_loss_matches"], "ce");

  a.step_record = record("kl", train::LossType::kSoftKl, [](auto&) {});
  const CheckResult kl = run("loss_type", a);
  EXPECT_EQ(kl.status, Status::kFail);
  EXPECT_THAT(kl.message, HasSubstr("expected the recipe's ce loss but the logged loss is the kl"));
  EXPECT_EQ(run("loss_type", a, {{"expected", "kl"}}).status, Status::kPass);

  a.step_record =
      record("neither", train::LossType::kHardCrossEntropy, [](auto& r) { r.logged_loss *= 1.5; });
  const CheckResult neither = run("loss_type", a);
  EXPECT_EQ(neither.status, Status::kFail);
  EXPECT_THAT(neither.message, HasSubstr("matches neither"));
}

TEST(LossType, WrongDecayWeightsFail) {
  Artifacts a;
  a.step_record = record("weights", train::LossType::kHardCrossEntropy,
                         [](auto& r) { r.weights = r.weights.clone().fill_(1.0); });
  const CheckResult r = run("loss_type", a);
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_THAT(r.message, HasSubstr("recorded weights differ from the recipe's"));
}

// A random Qwen3.5 target with bf16 weights (exercises both GDN algorithms and the bf16 budget).
const fs::path& hybrid_target() {
  static const fs::path dir = [] {
    const fs::path d = testing::fresh_dir("parity") / "target";
    model::RandomTargetSpec t;
    t.family = model::Family::kQwen3_5;
    t.layout = model::TargetLayout::kVlm;
    model::write_random_target(d, t);
    return d;
  }();
  return dir;
}

TEST(HiddenStateParity, BackendsAgreeWithinTheirBudgets) {
  Artifacts a;
  a.target = hybrid_target();
  const CheckResult gdn = run("hidden_state_parity", a);  // f32 chunked vs recurrent
  EXPECT_EQ(gdn.status, Status::kPass) << gdn.message;
  EXPECT_EQ(gdn.evidence["budget"], "f32");
  const CheckResult dtypes = run("hidden_state_parity", a, {{"a", "cpu:f32"}, {"b", "cpu:bf16"}});
  EXPECT_EQ(dtypes.status, Status::kPass) << dtypes.message;
  EXPECT_EQ(dtypes.evidence["budget"], "bf16");
  const CheckResult strict =
      run("hidden_state_parity", a,
          {{"a", "cpu:f32"},
           {"b", "cpu:bf16"},
           {"bf16", {{"max_nmse", 1e-12}, {"min_cosine", 1.0}, {"min_top1", 1.0}}}});
  EXPECT_EQ(strict.status, Status::kFail) << "bf16 cannot meet an f32-tight budget";
}

TEST(HiddenStateParity, ReferenceDumpNamesTheFirstDivergingLayer) {
  const io::Checkpoint ckpt = io::Checkpoint::open(hybrid_target());
  model::TargetOptions o;
  o.dtype = at::kFloat;
  const auto target = model::TargetModel::load(ckpt, o);
  const std::vector<std::int64_t> tokens = {3, 1, 4, 1, 5, 9, 2, 6};
  const auto r = target->forward(tokens, {0, 1, 2, 3});
  auto dump = [&](const std::string& name, std::int64_t perturbed_layer, std::int64_t drop_layer) {
    io::NamedTensors t = {{"logits", r.logits}};
    for (std::int64_t l = 0; l < 4; ++l) {
      if (l == drop_layer) continue;
      at::Tensor h = r.taps.at(l);
      if (l >= perturbed_layer) h = h + 0.05 * h.abs().max() * at::randn(h.sizes());
      t.emplace_back("hidden." + std::to_string(l), h);
    }
    const fs::path p = hybrid_target().parent_path() / name;
    io::write_tensors(p, t, {{"tokens", "3,1,4,1,5,9,2,6"}, {"dtype", "f32"}});
    return p.string();
  };
  Artifacts a;
  a.target = hybrid_target();
  a.reference_dump = dump("same.safetensors", 99, -1);
  const CheckResult same = run("hidden_state_parity", a, {{"a", "cpu:f32"}});
  EXPECT_EQ(same.status, Status::kPass) << same.message;
  a.reference_dump = dump("drift.safetensors", 2, -1);
  const CheckResult drift = run("hidden_state_parity", a, {{"a", "cpu:f32"}});
  EXPECT_EQ(drift.status, Status::kFail);
  EXPECT_EQ(drift.evidence["first_diverging_layer"], 2);
  EXPECT_THAT(drift.message, HasSubstr("diverge from layer 2"));
  a.reference_dump = dump("missing.safetensors", 99, 1);
  const CheckResult missing = run("hidden_state_parity", a, {{"a", "cpu:f32"}});
  EXPECT_EQ(missing.status, Status::kError);
  EXPECT_THAT(missing.message, HasSubstr("reference dump has no \"hidden.1\""));
}

TEST(CheckFramework, UnknownParametersAndBadInputAreErrors) {
  Artifacts a;
  a.target = kQwen36;
  const CheckResult unknown = run("layer_path", a, {{"bogus", 1}});
  EXPECT_EQ(unknown.status, Status::kError);
  EXPECT_THAT(unknown.message, HasSubstr("unknown parameter \"bogus\""));
  a.target = "/nonexistent";
  EXPECT_EQ(run("layer_path", a).status, Status::kError);
}

TEST(Reports, ExitCodesJsonAndJunit) {
  std::vector<CheckResult> results(3);
  results[0].check = "a";
  results[1].check = "b";
  results[1].status = Status::kSkip;
  results[1].message = "needs <x> & \"y\"";
  results[2].check = "c";
  EXPECT_EQ(exit_code(results, false), 0);
  EXPECT_EQ(exit_code(results, true), 1);
  results[2].status = Status::kFail;
  EXPECT_EQ(exit_code(results, false), 1);
  results[0].status = Status::kError;
  EXPECT_EQ(exit_code(results, false), 2);
  const auto j = json_report(results);
  EXPECT_EQ(j["summary"]["fail"], 1);
  EXPECT_EQ(j["results"][1]["status"], "skip");
  const std::string xml = junit_report({{"run", results, {}}});
  EXPECT_THAT(xml, HasSubstr("tests=\"3\" failures=\"1\" errors=\"1\" skipped=\"1\""));
  EXPECT_THAT(xml, HasSubstr("needs &lt;x&gt; &amp; &quot;y&quot;"));
  EXPECT_THAT(xml, Not(HasSubstr("<testsuites")));
}

TEST(Reports, JunitFailuresCarryTypeTimeAndTheNumbers) {
  CheckResult fail;
  fail.check = "min_tau";
  fail.status = Status::kFail;
  fail.message = "τ macro 1.003 < required 3.1";
  fail.measured["tau_macro"] = 1.003;
  fail.thresholds["required_tau"] = 3.1;
  fail.evidence["golden"] = "g.json";
  fail.seconds = 1.25;
  const std::string xml = junit_report({{"run", {fail}, {}}});
  EXPECT_THAT(xml, HasSubstr("failures=\"1\" errors=\"0\" skipped=\"0\" time=\"1.250\""));
  EXPECT_THAT(xml, HasSubstr("name=\"min_tau\" time=\"1.250\""));
  EXPECT_THAT(xml, HasSubstr("<failure message=\"τ macro 1.003 &lt; required 3.1\" "
                             "type=\"draftgate.fail\">τ macro 1.003 &lt; required 3.1\n"
                             "measured: {\n  \"tau_macro\": 1.003\n}\n"
                             "thresholds: {\n  \"required_tau\": 3.1\n}\n"
                             "evidence: {\n  \"golden\": \"g.json\"\n}\n</failure>"));
  EXPECT_THAT(xml, HasSubstr("<system-out>τ macro 1.003 &lt; required 3.1</system-out>"));
  const std::string several = junit_report({{"a", {fail}, {}}, {"b", {fail}, {}}});
  EXPECT_THAT(several, HasSubstr("<testsuites name=\"draftgate\" tests=\"2\" failures=\"2\" "
                                 "errors=\"0\" time=\"2.500\">"));
}

TEST(Reports, FailOnSkipMakesASkipAFailureNamingWhatWasMissing) {
  std::vector<CheckResult> results(3);
  results[0].check = "layer_path";
  results[1].check = "loss_type";
  results[1].status = Status::kSkip;
  results[1].message = "needs a step record (--step-record)";
  results[2].check = "min_tau";
  results[2].status = Status::kSkip;
  results[2].message = "needs a golden";
  EXPECT_EQ(
      summary_line(results),
      "1 passed; 2 skipped: loss_type (needs a step record (--step-record)), min_tau (needs a "
      "golden)");
  fail_skips(results);
  EXPECT_EQ(results[1].status, Status::kFail);
  EXPECT_EQ(results[1].evidence["skipped"], "needs a step record (--step-record)");
  EXPECT_EQ(summary_line(results),
            "2 failed: loss_type (skipped under --fail-on-skip: needs a step record "
            "(--step-record)), min_tau (skipped under --fail-on-skip: needs a golden); 1 passed");
  EXPECT_EQ(exit_code(results, false), 1);
  const std::string xml = junit_report({{"run", results, {}}});
  EXPECT_THAT(xml, HasSubstr("failures=\"2\" errors=\"0\" skipped=\"0\""));
  EXPECT_THAT(xml, HasSubstr("type=\"draftgate.skipped\""));
  EXPECT_THAT(xml, Not(HasSubstr("<skipped")));
}

TEST(Reports, VerdictMatrixMarksUnexpectedVerdicts) {
  CheckResult pass, fail;
  pass.check = "a";
  fail.check = "b";
  fail.status = Status::kFail;
  const std::vector<SuiteRun> runs = {
      {"ref", {pass, fail}, {{"a", Status::kPass}, {"b", Status::kPass}}},
      {"bug", {pass, fail}, {{"b", Status::kFail}}}};
  EXPECT_EQ(unmet_expectations(runs[0]), std::vector<std::string>{"b"});
  EXPECT_TRUE(unmet_expectations(runs[1]).empty());
  const std::string m = verdict_matrix(runs);
  EXPECT_THAT(m, HasSubstr("FAIL!"));
  EXPECT_EQ(m.find("FAIL!"), m.rfind("FAIL!")) << "only the reference's fail is unexpected";
  const auto j = json_report(runs);
  EXPECT_EQ(j["summary"]["fail"], 2);
  EXPECT_EQ(j["suites"][0]["unmet_expectations"], nlohmann::json::array({"b"}));
  EXPECT_THAT(junit_report(runs), HasSubstr("<testsuites name=\"draftgate\" tests=\"4\""));
}

}  // namespace
}  // namespace draftgate::checks
