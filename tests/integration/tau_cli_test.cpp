// Measured τ end to end through the CLI: `tau import` from vLLM scrapes and SGLang responses,
// `golden record --measured`, `check --measured` passing a good drafter's measurement and failing a
// collapsed one, the like-for-like refusals, and hostile inputs (exit 2, one stderr line).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "draftgate/tau/prompt_set.h"
#include "engine_outputs.h"
#include "engine_stand_in.h"
#include "run_cli.h"
#include "test_files.h"

namespace draftgate {
namespace {

using ::testing::HasSubstr;
using testing::run_draftgate;
using testing::VllmEngineCounts;
namespace fs = std::filesystem;

using testing::write_file;

// Exit 2 with exactly one line on stderr that contains `needle`.
void expect_bad_input(const std::string& args, const std::string& needle) {
  const auto r = run_draftgate(args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
  EXPECT_THAT(r.err, HasSubstr("draftgate: error: ")) << args;
  EXPECT_THAT(r.err, HasSubstr(needle)) << args;
}

struct Workspace {
  fs::path dir, prompts, other_prompts, golden;
  std::string measure(const std::string& name, const std::vector<VllmEngineCounts>& after,
                      const std::string& extra) const {
    const fs::path scrape = write_file(dir / (name + ".txt"), testing::vllm_scrape(after));
    const fs::path out = dir / (name + ".json");
    const auto r = run_draftgate("tau import --vllm-metrics " + scrape.string() + " " + extra +
                                 " --out " + out.string());
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return out.string();
  }
};

const std::string kModel = "Qwen/Qwen3-8B";

Workspace workspace(const std::string& name) {
  Workspace w;
  w.dir = testing::fresh_dir(name);
  w.prompts = write_file(w.dir / "prompts.jsonl",
                         "{\"id\": \"gsm8k-1\", \"input_ids\": [1, 2, 3]}\n"
                         "{\"id\": \"gsm8k-2\", \"input_ids\": [4, 5]}\n");
  w.other_prompts = write_file(w.dir / "other.jsonl", "{\"id\": \"x\", \"input_ids\": [7]}\n");
  // The reference drafter: τ pooled 1 + 1950 / 1300 = 2.5 over the run, depths 0.7 / 0.5 / 0.3.
  const fs::path before = write_file(
      w.dir / "ref-before.txt", testing::vllm_scrape({{kModel, 0, 200, 600, 300, {140, 100, 60}},
                                                      {kModel, 1, 100, 300, 150, {70, 50, 30}}}));
  const std::string ref = w.measure("ref",
                                    {{kModel, 0, 1000, 3000, 1500, {700, 500, 300}},
                                     {kModel, 1, 600, 1800, 900, {420, 300, 180}}},
                                    "--before " + before.string() + " --prompts " +
                                        w.prompts.string() + " --engine-version 0.11.2");
  w.golden = w.dir / "golden.json";
  const auto r = run_draftgate("golden record --measured " + ref + " --out " + w.golden.string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("vllm τ pooled 2.5 (pooled 2.5) over 1300 drafts"));
  return w;
}

TEST(TauCli, ImportRecordAndGateBothWays) {
  const Workspace w = workspace("tau_cli_gate");
  const auto ref = nlohmann::json::parse(std::ifstream(w.dir / "ref.json"));
  EXPECT_EQ(ref["schema"], "draftgate.measured_tau/1");
  EXPECT_EQ(ref["engine"]["version"], "0.11.2");
  EXPECT_EQ(ref["tau_pooled"], 2.5);
  EXPECT_EQ(ref["block_size"], 4);
  EXPECT_EQ(ref["model_name"], kModel);
  // The same prompt-set identity goldens use.
  EXPECT_EQ(ref["prompt_set"]["sha256"], decode::read_prompt_set(w.prompts, "--prompts").sha256);
  EXPECT_EQ(ref["prompt_set"]["prompts"], 2);
  EXPECT_THAT(ref["sources"]["drafts"].get<std::string>(),
              HasSubstr("vllm:spec_decode_num_drafts_total{model_name=\"Qwen/Qwen3-8B\"}"));

  const std::string prompts = " --prompts " + w.prompts.string();
  // A good drafter: 2.45 ≥ 0.95 × 2.5; a collapsed one: 1.02.
  const std::string good =
      w.measure("good", {{kModel, 0, 1000, 3000, 1450, {680, 480, 290}}}, prompts);
  const std::string collapsed =
      w.measure("collapsed", {{kModel, 0, 1000, 3000, 20, {20, 0, 0}}}, prompts);
  const std::string check = "check --only min_tau --golden " + w.golden.string() + " --measured ";
  auto r = run_draftgate(check + good);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("τ pooled (vllm) 2.45 ≥ 2.375 (golden 2.5, ratio 0.98)"));
  r = run_draftgate(check + collapsed);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("τ collapsed to 1.02"));
  EXPECT_THAT(r.out, HasSubstr("τ pooled (vllm) 1.02 < required 2.375"));
  // Per-depth floors apply unchanged: 0.68 / 0.48 / 0.29 against 0.9 × 0.7 / 0.5 / 0.3.
  EXPECT_EQ(run_draftgate(check + good + " --param min_tau.per_position_min_ratio=0.9").exit_code,
            0);
  r = run_draftgate(check + good + " --param min_tau.per_position_min_ratio=0.99");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("depth 1 acceptance 0.68 < 0.99 × golden 0.7"));

  // A suite names the measurement as an artifact.
  const fs::path suite = write_file(w.dir / "suite.json",
                                    "{\"schema\": \"draftgate.suite/1\", \"name\": \"served\", "
                                    "\"artifacts\": {\"golden\": \"golden.json\", \"measured\": "
                                    "\"collapsed.json\"}, \"checks\": [{\"check\": \"min_tau\"}], "
                                    "\"expect\": {\"min_tau\": \"fail\"}}");
  r = run_draftgate("check --suite " + suite.string() + " --verify-expectations");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // The structural checks ignore a measured golden's (absent) layout and taps.
  r = run_draftgate("check --only layer_path --golden " + w.golden.string() + " --target " +
                    std::string(DRAFTGATE_SOURCE_DIR) +
                    "/fixtures/real-layouts/qwen36-27b-awq-fantasylord");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(TauCli, OnlyLikeIsComparedWithLike) {
  const Workspace w = workspace("tau_cli_like");
  const std::string check = "check --only min_tau --golden " + w.golden.string() + " --measured ";
  const std::string prompts = " --prompts " + w.prompts.string();
  const std::string k7 =
      w.measure("k7", {{kModel, 0, 1000, 7000, 1500, {600, 400, 250, 150, 60, 30, 10}}}, prompts);
  expect_bad_input(check + k7, "measured with 7 speculative tokens (block 8) but the golden (");
  const std::string unnamed =
      w.measure("unnamed", {{kModel, 0, 1000, 3000, 1450, {680, 480, 290}}}, "");
  expect_bad_input(check + unnamed, "the measurement names no prompt set");
  expect_bad_input("golden record --measured " + unnamed + " --out " + (w.dir / "g2.json").string(),
                   "the measurement names no prompt set");
  const std::string elsewhere =
      w.measure("elsewhere", {{kModel, 0, 1000, 3000, 1450, {680, 480, 290}}},
                "--prompts " + w.other_prompts.string());
  expect_bad_input(check + elsewhere, "prompt set sha256 ");

  // SGLang's τ macro is not vLLM's τ pooled.
  std::string lines;
  for (const auto& q : std::vector<testing::SglangResponse>{{"gsm8k-1", 40, 16, 3, {4, 4, 4, 4}},
                                                            {"gsm8k-2", 30, 10, 3, {2, 2, 2, 4}}})
    lines += testing::sglang_response(q);
  const fs::path responses = write_file(w.dir / "responses.jsonl", lines);
  const fs::path sglang = w.dir / "sglang.json";
  auto r = run_draftgate("tau import --sglang-requests " + responses.string() + prompts +
                         " --out " + sglang.string());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("sglang, τ pooled 2.69231, τ macro 2.75 (gated on macro)"));
  expect_bad_input(check + sglang.string(), "measured by sglang but the golden (");

  // A measurement against a decoded golden, a decoded run against a measured golden.
  const std::string decoded = std::string(DRAFTGATE_SOURCE_DIR) + "/golden/qwen3-reference.json";
  expect_bad_input("check --only min_tau --golden " + decoded + " --measured " + sglang.string(),
                   "a measured τ is only compared with a measured golden");
  expect_bad_input("check --only min_tau --golden " + w.golden.string() + " --target " +
                       std::string(DRAFTGATE_SOURCE_DIR) + "/fixtures/trained/qwen3-target",
                   "the golden was measured by vllm, not decoded by draftgate");
  // A measured golden exists already: --force to replace it.
  expect_bad_input(
      "golden record --measured " + (w.dir / "ref.json").string() + " --out " + w.golden.string(),
      "golden file exists");
  expect_bad_input("golden record --measured " + (w.dir / "ref.json").string() + " --prompts " +
                       w.prompts.string() + " --out " + (w.dir / "g3.json").string(),
                   "--measured: a measured golden is not decoded");
}

// Every engine version's fields import (SGLang ≤ 0.5.10 responses say k in spec_draft_token_num;
// vLLM per-request metrics give τ macro), and a golden gates on its own τ definition: a pooled
// golden takes a per-request measurement's τ pooled, a macro golden refuses a pooled-only one.
TEST(TauCli, EveryEngineVersionImportsAndGatesOnTheGoldensDefinition) {
  const Workspace w = workspace("tau_cli_versions");
  const std::string prompts = " --prompts " + w.prompts.string();
  std::string old_sglang;
  for (auto q : std::vector<testing::SglangResponse>{{"gsm8k-1", 40, 16, 3, {}},
                                                     {"gsm8k-2", 30, 10, 3, {}}}) {
    q.vintage = "0.5.10";
    old_sglang += testing::sglang_response(q);
  }
  const fs::path old_file = write_file(w.dir / "sglang-0.5.10.jsonl", old_sglang);
  auto r = run_draftgate("tau import --sglang-requests " + old_file.string() + prompts + " --out " +
                         (w.dir / "old.json").string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("τ macro 2.75 (gated on macro), 26 drafts, 3 speculative tokens"));

  // vLLM per request: τ_i = 1 + 24/16 = 2.5 and 1 + 27/10 = 3.7 → τ macro 3.1, τ pooled
  // 1 + 51/26 = 2.96154.
  const fs::path responses =
      write_file(w.dir / "vllm.jsonl",
                 testing::vllm_response({"cmpl-1", kModel, 16, 24, 48, 3, {4, 4, 4, 4}}) +
                     testing::vllm_response({"cmpl-2", kModel, 10, 27, 30, 3, {0, 1, 1, 8}}));
  const fs::path per_request = w.dir / "per-request.json";
  r = run_draftgate("tau import --vllm-responses " + responses.string() + prompts +
                    " --model-name " + kModel + " --out " + per_request.string());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("vllm, τ pooled 2.96154, τ macro 3.1 (gated on macro)"));
  const auto file = nlohmann::json::parse(std::ifstream(per_request));
  EXPECT_EQ(file["tau_formulas"]["macro"],
            "mean over requests of 1 + accepted drafts / verify steps");
  EXPECT_EQ(file["model_name"], kModel);

  // The pooled golden (τ 2.5) compares the per-request file's τ pooled.
  const std::string check = "check --only min_tau --golden ";
  r = run_draftgate(check + w.golden.string() + " --measured " + per_request.string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("τ pooled (vllm) 2.962 ≥ 2.375 (golden 2.5, ratio 1.185)"));
  // A macro golden refuses /metrics counters, which have no τ macro.
  const fs::path macro_golden = w.dir / "macro-golden.json";
  r = run_draftgate("golden record --measured " + per_request.string() + " --out " +
                    macro_golden.string());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = run_draftgate(check + macro_golden.string() + " --measured " + per_request.string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("τ macro (vllm) 3.1"));
  expect_bad_input(check + macro_golden.string() + " --measured " + (w.dir / "ref.json").string(),
                   "not comparable with the golden: the measurement has τ pooled only but the "
                   "golden (");
  // A golden whose recorded formula is not this measurement's.
  auto edited = nlohmann::json::parse(std::ifstream(macro_golden));
  edited["measured"]["tau_formulas"]["macro"] = "mean over requests of accepted drafts / steps";
  const fs::path other_formula = write_file(w.dir / "other-formula.json", edited.dump());
  expect_bad_input(check + other_formula.string() + " --measured " + per_request.string(),
                   "τ macro is mean over requests of 1 + accepted drafts / verify steps in the "
                   "measurement but the golden (");
}

// Two saved scrapes of a server restarted in between: exit 2 naming the scrape and what changed,
// where today's main wrote τ 1.9077 for a run of τ 1.7623 with exit 0.
// Responses whose ids SGLang made itself (the client sent no rid: uuid4().hex) are tied to the
// prompts by order; ids the client chose are tied by id (catalogue: ids of another prompt set).
TEST(TauCli, SglangResponsesAreTiedByTheirIdsOrByOrder) {
  const Workspace w = workspace("tau_cli_sglang_ids");
  std::string lines;
  for (const auto& q : std::vector<testing::SglangResponse>{
           {"9f86d081884c7d659a2feaa0c55ad015", 40, 16, 3, {4, 4, 4, 4}},
           {"a3bf4f1b2b0b822cd15d6c15b0f00a08", 30, 10, 3, {2, 2, 2, 4}}})
    lines += testing::sglang_response(q);
  const fs::path responses = write_file(w.dir / "uuids.jsonl", lines);
  auto r = run_draftgate("tau import --sglang-requests " + responses.string() + " --prompts " +
                         w.prompts.string() + " --out " + (w.dir / "uuids.json").string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("τ macro 2.75"));
}

TEST(TauCli, RestartBetweenTwoSavedScrapesIsExitTwo) {
  const fs::path dir = testing::fresh_dir("tau_cli_restart");
  const fs::path before = write_file(
      dir / "before.txt", testing::vllm_scrape({{kModel, 0, 57, 171, 34, {20, 10, 4}}}, 1.7645e9));
  VllmEngineCounts restarted{kModel, 0, 122, 366, 93, {50, 28, 15}};
  restarted.created = 1.7646e9;
  const fs::path after =
      write_file(dir / "after.txt", testing::vllm_scrape({restarted}, 1.76459e9));
  expect_bad_input("tau import --vllm-metrics " + after.string() + " --before " + before.string() +
                       " --out " + (dir / "m.json").string(),
                   after.string() +
                       ": the server restarted between the scrapes: "
                       "process_start_time_seconds is 1764590000 here but 1764500000");
  EXPECT_FALSE(fs::exists(dir / "m.json"));
}

TEST(TauCli, HostileInputsAreOneLineAndExitTwo) {
  const fs::path dir = testing::fresh_dir("tau_cli_hostile");
  const std::string out = " --out " + (dir / "m.json").string();
  const fs::path empty = write_file(dir / "empty.txt", "");
  expect_bad_input("tau import --vllm-metrics " + empty.string() + out,
                   "empty.txt: file is empty (0 bytes), expected Prometheus text");
  const fs::path comments = write_file(dir / "comments.txt", "# HELP nothing\n");
  expect_bad_input("tau import --vllm-metrics " + comments.string() + out,
                   "no vllm:spec_decode_num_drafts_total series");
  const fs::path garbage =
      write_file(dir / "garbage.bin", std::string("\x89PNG\r\n\x1a\n\x00\x00\xff", 11));
  expect_bad_input("tau import --vllm-metrics " + garbage.string() + out, "garbage.bin: line 1: ");
  expect_bad_input("tau import --sglang-requests " + garbage.string() + out,
                   "garbage.bin: line 1: not a JSON /generate response");
  const fs::path huge = write_file(dir / "huge.txt",
                                   "vllm:spec_decode_num_drafts_total 1e308\n"
                                   "vllm:spec_decode_num_draft_tokens_total 1e309\n"
                                   "vllm:spec_decode_num_accepted_tokens_total 1\n");
  expect_bad_input("tau import --vllm-metrics " + huge.string() + out, "not a count");
  const fs::path deep =
      write_file(dir / "deep.jsonl", std::string(200000, '[') + std::string(200000, ']'));
  expect_bad_input("tau import --sglang-requests " + deep.string() + out,
                   "line 1: not a JSON /generate response: JSON nests deeper than 64 levels");
  const fs::path scrape =
      write_file(dir / "after.txt", testing::vllm_scrape({{kModel, 0, 10, 30, 15, {7, 5, 3}}}));
  expect_bad_input("tau import --vllm-metrics " + scrape.string() + " --out " + scrape.string(),
                   "--out " + scrape.string() + ": is the input file");
  EXPECT_EQ(testing::read_file(scrape), testing::vllm_scrape({{kModel, 0, 10, 30, 15, {7, 5, 3}}}));
  expect_bad_input(
      "tau import --vllm-metrics " + scrape.string() + " --sglang-requests " + deep.string() + out,
      "give exactly one of --vllm-metrics, --vllm-metrics-url, --vllm-responses and "
      "--sglang-requests");
  expect_bad_input("tau import" + out,
                   "give exactly one of --vllm-metrics, --vllm-metrics-url, --vllm-responses and "
                   "--sglang-requests");
  expect_bad_input("check --only min_tau --measured " + garbage.string() + " --golden " +
                       (dir / "none.json").string(),
                   "none.json");
  const fs::path not_measured = write_file(dir / "n.json", "{\"schema\": \"draftgate.golden/1\"}");
  expect_bad_input("check --only min_tau --measured " + not_measured.string(),
                   "given as --measured but it is a golden (draftgate.golden/1)");
  EXPECT_FALSE(fs::exists(dir / "m.json"));
}

// draftgate's own run, exported in vLLM's format and imported, gives exactly eval's τ pooled and
// per-depth acceptance: both paths use one definition.
TEST(TauCli, EvalCountersImportToEvalsTau) {
  const fs::path dir = testing::fresh_dir("tau_cli_eval");
  const std::string fixtures = std::string(DRAFTGATE_SOURCE_DIR) + "/fixtures/trained/";
  const std::string prompts = fixtures + "prompts/held-out.jsonl";
  for (const char* family : {"qwen3", "qwen35"}) {
    const fs::path json = dir / (std::string(family) + ".json");
    const fs::path metrics = dir / (std::string(family) + ".metrics.txt");
    auto r =
        run_draftgate("eval --target " + fixtures + family + "-target --drafter " + fixtures +
                      family + "-drafter-reference --prompts " + prompts + " --max-new 12 --json " +
                      json.string() + " --metrics-out " + metrics.string());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const fs::path measured = dir / (std::string(family) + ".tau.json");
    r = run_draftgate("tau import --vllm-metrics " + metrics.string() + " --prompts " + prompts +
                      " --out " + measured.string());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto e = nlohmann::json::parse(std::ifstream(json));
    const auto m = nlohmann::json::parse(std::ifstream(measured));
    EXPECT_DOUBLE_EQ(m["tau_pooled"].get<double>(), e["tau_pooled"].get<double>()) << family;
    EXPECT_GT(e["tau_pooled"].get<double>(), 1.0) << family;  // the drafter does get accepted
    ASSERT_EQ(m["per_position_acceptance"].size(), e["per_position_acceptance"].size());
    for (std::size_t d = 0; d < m["per_position_acceptance"].size(); ++d)
      EXPECT_DOUBLE_EQ(m["per_position_acceptance"][d].get<double>(),
                       e["per_position_acceptance"][d].get<double>())
          << family << " depth " << d + 1;
    EXPECT_EQ(m["drafts"], e["steps"]);
    EXPECT_EQ(m["accepted_tokens"], e["accepted"]);
    EXPECT_EQ(m["prompt_set"]["sha256"], e["prompt_set_sha256"]);
  }
}

TEST(TauCli, ScrapesALiveServerBeforeAndAfterTheRun) {
  const fs::path dir = testing::fresh_dir("tau_cli_live");
  // Before the run: drafts 300, accepted 450; the run adds 1000 drafts and 1500 accepted tokens:
  // τ pooled = 1 + 1500 / 1000 = 2.5, depths 0.7 / 0.5 / 0.3.
  write_file(dir / "metrics", testing::vllm_scrape({{kModel, 0, 300, 900, 450, {210, 150, 90}}}));
  write_file(dir / "after.txt",
             testing::vllm_scrape({{kModel, 0, 1300, 3900, 1950, {910, 650, 390}}}));
  const fs::path prompts =
      write_file(dir / "prompts.jsonl", "{\"id\": \"a\", \"input_ids\": [1]}\n");
  // The stand-in engine serving the files of `dir` (GET /metrics reads dir/metrics).
  const testing::EngineStandIn server(dir / "server", "--serve-dir " + dir.string());
  ASSERT_GT(server.port(), 0) << "the local metrics server did not start";
  const fs::path out = dir / "run.tau.json";
  const auto r =
      run_draftgate("tau import --vllm-metrics-url " + server.url("/metrics") + " --run 'cp " +
                    (dir / "after.txt").string() + " " + (dir / "metrics").string() +
                    "' --prompts " + prompts.string() + " --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto m = nlohmann::json::parse(std::ifstream(out));
  EXPECT_EQ(m["tau_pooled"], 2.5);
  EXPECT_EQ(m["drafts"], 1000);
  EXPECT_EQ(m["per_position_acceptance"], nlohmann::json({0.7, 0.5, 0.3}));
  EXPECT_THAT(m["inputs"]["before"].get<std::string>(), HasSubstr(server.url("/metrics") + " at "));
  EXPECT_THAT(m["inputs"]["run"].get<std::string>(), HasSubstr("cp "));

  // The run failed, the URL is wrong, nothing listens, a scheme other than http(s): exit 2.
  expect_bad_input("tau import --vllm-metrics-url " + server.url("/metrics") +
                       " --run false --out " + (dir / "x.json").string(),
                   "--run: \"false\" exited with status 1; nothing was measured");
  expect_bad_input("tau import --vllm-metrics-url " + server.url("/nope") + " --run true --out " +
                       (dir / "x.json").string(),
                   "/nope: HTTP status 404");
  expect_bad_input("tau import --vllm-metrics-url http://127.0.0.1:1/metrics --run true --out " +
                       (dir / "x.json").string(),
                   "127.0.0.1:1/metrics: cannot reach the server");
  expect_bad_input("tau import --vllm-metrics-url file:///etc/hostname --run true --out " +
                       (dir / "x.json").string(),
                   "file:///etc/hostname: cannot reach the server");
  expect_bad_input("tau import --vllm-metrics-url " + server.url("/metrics") + " --out " +
                       (dir / "x.json").string(),
                   "--vllm-metrics-url: needs --run");
  EXPECT_FALSE(fs::exists(dir / "x.json"));
}

}  // namespace
}  // namespace draftgate
