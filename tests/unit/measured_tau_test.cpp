// Measured τ from serving engines: the Prometheus parser and vLLM counters, SGLang /generate
// responses, the measured-τ file and the like-for-like rule — against hand computations.

#include "draftgate/tau/measured_tau.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "draftgate/tau/engine_import.h"
#include "engine_outputs.h"
#include "error_text.h"
#include "test_files.h"

namespace draftgate {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using testing::error_of;
using ::testing::HasSubstr;
using testing::SglangResponse;
using testing::VllmEngineCounts;
namespace fs = std::filesystem;

using testing::write_file;

tau::MeasuredTau import_vllm(const fs::path& after, std::optional<fs::path> before = {},
                             std::optional<std::string> model = {}) {
  tau::VllmImport in;
  in.after = tau::read_scrape_file(after);
  if (before) in.before = tau::read_scrape_file(*before);
  in.model_name = std::move(model);
  return tau::import_vllm_metrics(in);
}

// Two engines (data parallel) of the gated model and a second model on the same server.
// Over the run: drafts 800 + 500 = 1300, accepted 1200 + 750 = 1950, per position
// 910 / 650 / 390 → τ pooled = 1 + 1950 / 1300 = 2.5, acceptance 0.7 / 0.5 / 0.3.
const std::vector<VllmEngineCounts> kBefore = {{"Qwen/Qwen3-8B", 0, 200, 600, 300, {140, 100, 60}},
                                               {"Qwen/Qwen3-8B", 1, 100, 300, 150, {70, 50, 30}},
                                               {"other/model", 0, 50, 150, 10, {8, 2, 0}}};
const std::vector<VllmEngineCounts> kAfter = {
    {"Qwen/Qwen3-8B", 0, 1000, 3000, 1500, {700, 500, 300}},
    {"Qwen/Qwen3-8B", 1, 600, 1800, 900, {420, 300, 180}},
    {"other/model", 0, 9000, 27000, 100, {90, 10, 0}}};

struct VllmFiles {
  fs::path dir, before, after;
};

VllmFiles vllm_files(const std::string& name, const std::vector<VllmEngineCounts>& before,
                     const std::vector<VllmEngineCounts>& after) {
  const fs::path dir = testing::fresh_dir(name);
  return {dir, write_file(dir / "before.txt", testing::vllm_scrape(before)),
          write_file(dir / "after.txt", testing::vllm_scrape(after))};
}

TEST(PrometheusText, ParsesLabelsEscapesTimestampsAndComments) {
  const auto t = tau::parse_prometheus_text(
      "# HELP a_total Help with \"quotes\".\n# TYPE a_total counter\n# a free comment\n\n"
      "a_total{x=\"q\\\"uote\\\\d\\nl\",y=\"\",} 3.0 1712345678000\r\n"
      "b NaN\nc{le=\"+Inf\"} +Inf\n",
      "m.txt");
  ASSERT_EQ(t.samples.size(), 3u);
  EXPECT_EQ(t.samples[0].name, "a_total");
  EXPECT_EQ(t.samples[0].labels.at("x"), "q\"uote\\d\nl");
  EXPECT_EQ(t.samples[0].labels.at("y"), "");
  EXPECT_EQ(t.samples[0].value, 3.0);
  EXPECT_EQ(t.samples[0].line, 5u);
  EXPECT_TRUE(std::isnan(t.samples[1].value));
  EXPECT_TRUE(std::isinf(t.samples[2].value));
  EXPECT_EQ(t.types.at("a_total"), "counter");
  for (const char* bad :
       {"a{x=\"1\" 2\n", "a{x=1} 2\n", "a 1 2 3\n", "a{x=\"\\q\"} 1\n", "a one\n", "a\n",
        "\x7f\x45LF\x01\x02 1\n", "{x=\"1\"} 2\n", "a{x=\"1\",x=\"2\"} 3\n"})
    EXPECT_THAT(error_of([&] { tau::parse_prometheus_text(bad, "m.txt"); }),
                HasSubstr("m.txt: line 1: "))
        << bad;
}

TEST(VllmMetrics, RunDifferenceSummedOverEnginesOfTheChosenModel) {
  const auto f = vllm_files("vllm_ok", kBefore, kAfter);
  const auto m = import_vllm(f.after, f.before, std::string("Qwen/Qwen3-8B"));
  EXPECT_EQ(m.engine, "vllm");
  EXPECT_EQ(m.tau_definition, "pooled");
  EXPECT_DOUBLE_EQ(m.tau_pooled, 2.5);
  EXPECT_FALSE(m.tau_macro);
  EXPECT_THAT(m.per_position_acceptance,
              ElementsAre(DoubleNear(0.7, 1e-12), DoubleNear(0.5, 1e-12), DoubleNear(0.3, 1e-12)));
  EXPECT_EQ(m.drafts, 1300);
  EXPECT_EQ(m.draft_tokens, 3900);
  EXPECT_EQ(m.accepted_tokens, 1950);
  EXPECT_EQ(m.num_speculative_tokens, 3);
  EXPECT_EQ(m.block_size(), 4);
  EXPECT_EQ(*m.model_name, "Qwen/Qwen3-8B");
  EXPECT_THAT(m.sources["drafts"].get<std::string>(), HasSubstr("summed over 2 label set(s)"));

  // The other model, alone: 1 + 90 / 8950.
  const auto other = import_vllm(f.after, f.before, std::string("other/model"));
  EXPECT_DOUBLE_EQ(other.tau_pooled, 1.0 + 90.0 / 8950.0);
  // Without --before: the counters since the server started, 1 + 2400 / 1600.
  const auto since_start = import_vllm(f.after, {}, std::string("Qwen/Qwen3-8B"));
  EXPECT_DOUBLE_EQ(since_start.tau_pooled, 2.5);
  EXPECT_THAT(since_start.sources["drafts"].get<std::string>(), HasSubstr("since server start"));
}

TEST(VllmMetrics, ModelSelectionIsExplicitWhenSeveralAreServed) {
  const auto f = vllm_files("vllm_models", kBefore, kAfter);
  EXPECT_THAT(error_of([&] { import_vllm(f.after, f.before); }),
              HasSubstr("counters of several models (Qwen/Qwen3-8B, other/model) (hint: choose "
                        "one with --model-name)"));
  EXPECT_THAT(error_of([&] { import_vllm(f.after, f.before, std::string("x")); }),
              HasSubstr("no vllm:spec_decode_* series with model_name=\"x\" (found: "));
  const std::vector<VllmEngineCounts> one(kAfter.begin(), kAfter.begin() + 2);
  const fs::path single = write_file(f.dir / "single.txt", testing::vllm_scrape(one));
  EXPECT_EQ(*import_vllm(single).model_name, "Qwen/Qwen3-8B");
}

TEST(VllmMetrics, CounterResetsAreRefused) {
  auto restarted = kAfter;
  restarted[1] = {"Qwen/Qwen3-8B", 1, 60, 180, 90, {42, 30, 18}};  // engine 1 restarted
  auto f = vllm_files("vllm_reset", kBefore, restarted);
  EXPECT_THAT(error_of([&] { import_vllm(f.after, f.before, std::string("Qwen/Qwen3-8B")); }),
              HasSubstr("vllm:spec_decode_num_drafts{engine=\"1\",model_name=\"Qwen/Qwen3-8B\"} "
                        "fell from 100 "));
  auto vanished = kAfter;
  vanished.erase(vanished.begin() + 1);
  f = vllm_files("vllm_vanished", kBefore, vanished);
  EXPECT_THAT(error_of([&] { import_vllm(f.after, f.before, std::string("Qwen/Qwen3-8B")); }),
              HasSubstr("but not here: the server restarted between the scrapes (counter reset)"));
}

TEST(VllmMetrics, NonCountsAreRefusedNamingTheSeries) {
  const fs::path dir = testing::fresh_dir("vllm_values");
  const std::string good = testing::vllm_scrape({kAfter[0]});
  const std::string sample =
      "vllm:spec_decode_num_drafts_total{model_name=\"Qwen/Qwen3-8B\","
      "engine=\"0\"} 1000.0";
  ASSERT_NE(good.find(sample), std::string::npos);
  for (const char* value : {"NaN", "+Inf", "-Inf", "1e400", "-3.0", "2.5", "1e300"}) {
    std::string text = good;
    text.replace(text.find(sample), sample.size(), sample.substr(0, sample.size() - 6) + value);
    const fs::path path = write_file(dir / "after.txt", text);
    EXPECT_THAT(error_of([&] { import_vllm(path); }),
                HasSubstr("vllm:spec_decode_num_drafts_total{engine=\"0\","))
        << value;
  }
}

TEST(VllmMetrics, MissingSeriesAreNamed) {
  const fs::path dir = testing::fresh_dir("vllm_missing");
  auto counts = kAfter[0];
  counts.per_pos = {};
  const fs::path no_pos = write_file(dir / "no_pos.txt", testing::vllm_scrape({counts}));
  EXPECT_THAT(error_of([&] { import_vllm(no_pos); }),
              HasSubstr("no vllm:spec_decode_num_accepted_tokens_per_pos_total series, so the "
                        "number of speculative tokens is unknown (hint: pass "
                        "--num-speculative-tokens"));
  tau::VllmImport with_k;
  with_k.after = tau::read_scrape_file(no_pos);
  with_k.num_speculative_tokens = 3;
  const auto m = tau::import_vllm_metrics(with_k);
  EXPECT_DOUBLE_EQ(m.tau_pooled, 2.5);
  EXPECT_TRUE(m.per_position_acceptance.empty());
  with_k.num_speculative_tokens = 2;  // 3000 draft tokens cannot come from 1000 drafts of 2
  EXPECT_THAT(error_of([&] { tau::import_vllm_metrics(with_k); }),
              HasSubstr("inconsistent counters: more draft tokens than drafts × 2"));

  std::string gap = testing::vllm_scrape({kAfter[0]});
  const std::string pos1 = "engine=\"0\",position=\"1\"} 500.0\n";
  const auto line_start = gap.rfind('\n', gap.find(pos1)) + 1;
  gap.erase(line_start, gap.find(pos1) + pos1.size() - line_start);
  EXPECT_THAT(error_of([&] { import_vllm(write_file(dir / "gap.txt", gap)); }),
              HasSubstr("has no series for position 1 (positions up to 2 are present)"));

  const fs::path gauges = write_file(dir / "gauges.txt",
                                     "# TYPE vllm:num_requests_running gauge\n"
                                     "vllm:num_requests_running 0.0\n");
  EXPECT_THAT(error_of([&] { import_vllm(gauges); }),
              HasSubstr("no vllm:spec_decode_num_drafts_total series (hint: scrape /metrics of a "
                        "vLLM server running with --speculative-config)"));
  auto broken = kAfter[0];
  broken.per_pos = {700, 500, 200};  // sums to 1400, not 1500
  EXPECT_THAT(
      error_of([&] { import_vllm(write_file(dir / "sum.txt", testing::vllm_scrape({broken}))); }),
      HasSubstr("the per-position counts sum to 1400, not to the 1500 accepted tokens"));
  EXPECT_THAT(error_of([&] { import_vllm(dir / "none.txt"); }),
              HasSubstr("none.txt: no such file"));
}

// Three requests, 3 draft tokens per step (hand computation):
//   τ_i = 40/16 = 2.5, 30/10 = 3.0, 18/10 = 1.8 → τ macro = 7.3 / 3, τ pooled = 88 / 36;
//   steps accepting ≥ 1 / 2 / 3 drafts: 12+8+6 = 26, 8+6+3 = 17, 4+4+1 = 9 of 36.
std::vector<SglangResponse> three_requests() {
  return {{"p1", 40, 16, 3, {4, 4, 4, 4}},
          {"p2", 30, 10, 3, {2, 2, 2, 4}},
          {"p3", 18, 10, 3, {4, 3, 2, 1}}};
}

fs::path jsonl(const fs::path& path, const std::vector<SglangResponse>& responses) {
  std::string text;
  for (const auto& r : responses) text += testing::sglang_response(r);
  return write_file(path, text);
}

TEST(SglangRequests, TauMacroPooledAndDepthsByHand) {
  const fs::path dir = testing::fresh_dir("sglang_ok");
  tau::SglangImport in;
  in.requests = jsonl(dir / "r.jsonl", three_requests());
  const auto m = tau::import_sglang_requests(in);
  EXPECT_EQ(m.engine, "sglang");
  EXPECT_EQ(m.tau_definition, "macro");
  EXPECT_DOUBLE_EQ(*m.tau_macro, 7.3 / 3);
  EXPECT_DOUBLE_EQ(m.tau_pooled, 88.0 / 36);
  EXPECT_DOUBLE_EQ(m.tau(), 7.3 / 3);
  EXPECT_THAT(m.per_position_acceptance,
              ElementsAre(DoubleNear(26.0 / 36, 1e-12), DoubleNear(17.0 / 36, 1e-12),
                          DoubleNear(9.0 / 36, 1e-12)));
  EXPECT_EQ(m.drafts, 36);
  EXPECT_EQ(m.accepted_tokens, 52);
  EXPECT_EQ(*m.requests, 3);
  EXPECT_EQ(m.num_speculative_tokens, 3);

  // Tied to a prompt set by meta_info.id (any order), or by order when the ids are SGLang's own.
  in.prompt_ids = std::vector<std::string>{"p3", "p1", "p2"};
  EXPECT_DOUBLE_EQ(*tau::import_sglang_requests(in).tau_macro, 7.3 / 3);
  in.prompt_ids = std::vector<std::string>{"a", "b", "c"};
  EXPECT_DOUBLE_EQ(*tau::import_sglang_requests(in).tau_macro, 7.3 / 3);
  in.prompt_ids = std::vector<std::string>{"a", "b"};
  in.prompts_file = "prompts.jsonl";
  EXPECT_THAT(error_of([&] { tau::import_sglang_requests(in); }),
              HasSubstr("3 responses but prompts.jsonl holds 2 prompts"));
  in.prompt_ids = std::vector<std::string>{"p1", "p2", "p3", "p4"};
  EXPECT_THAT(error_of([&] { tau::import_sglang_requests(in); }),
              HasSubstr("no response for prompt \"p4\" of prompts.jsonl"));
}

TEST(SglangRequests, MalformedResponsesAreNamed) {
  const fs::path dir = testing::fresh_dir("sglang_bad");
  auto error_for = [&](const std::string& text, std::optional<std::int64_t> k = {}) {
    tau::SglangImport in;
    in.requests = write_file(dir / "r.jsonl", text);
    in.num_speculative_tokens = k;
    return error_of([&] { tau::import_sglang_requests(in); });
  };
  const std::string good = testing::sglang_response(three_requests()[0]);
  EXPECT_THAT(error_for(good + "{\"text\": \"hi\"}\n"),
              HasSubstr("r.jsonl: line 2: the response has no meta_info object"));
  auto no_verify = nlohmann::json::parse(good);
  no_verify["meta_info"].erase("spec_verify_ct");
  EXPECT_THAT(error_for(no_verify.dump() + "\n"),
              HasSubstr("line 1: meta_info has no spec_verify_ct (hint: serve with "
                        "--speculative-algorithm DFLASH"));
  auto lying = nlohmann::json::parse(good);
  lying["meta_info"]["spec_accept_length"] = 3.5;
  EXPECT_THAT(error_for(lying.dump() + "\n"),
              HasSubstr("meta_info.spec_accept_length 3.5 is not completion_tokens / "
                        "spec_verify_ct = 2.5"));
  auto no_k = nlohmann::json::parse(good);
  no_k["meta_info"].erase("spec_proposed_drafts");
  EXPECT_THAT(error_for(no_k.dump() + "\n"),
              HasSubstr("do not say how many tokens were drafted per step"));
  tau::SglangImport with_k;
  with_k.requests = write_file(dir / "k.jsonl", no_k.dump());
  with_k.num_speculative_tokens = 3;
  EXPECT_DOUBLE_EQ(*tau::import_sglang_requests(with_k).tau_macro, 2.5);
  EXPECT_THAT(error_for(good, 5), HasSubstr("drafted 3 tokens per step, not 5"));
  auto bad_hist = nlohmann::json::parse(good);
  bad_hist["meta_info"]["spec_accept_histogram"] = {4, 4, 4};
  EXPECT_THAT(error_for(bad_hist.dump() + "\n"),
              HasSubstr("spec_accept_histogram counts 12 steps, spec_verify_ct 16"));
  EXPECT_THAT(error_for(""), HasSubstr("file is empty (0 bytes)"));
  EXPECT_THAT(error_for("\n \n"), HasSubstr("no /generate responses in the file"));
  EXPECT_THAT(error_for(std::string("\x00\xff\xfe garbage", 12)),
              HasSubstr("line 1: not a JSON /generate response"));
  EXPECT_THAT(error_for(std::string(100000, '[') + std::string(100000, ']')),
              HasSubstr("line 1: not a JSON /generate response: JSON nests deeper than 64 levels"));
  EXPECT_THAT(error_for("{\"meta_info\": {\"completion_tokens\": " + std::string(100000, '[') +
                        std::string(100000, ']') + ", \"spec_verify_ct\": 2}}"),
              HasSubstr("line 1: not a JSON /generate response: JSON nests deeper than 64 levels"));
  EXPECT_THAT(error_for("{\"meta_info\": {\"completion_tokens\": 1e999, \"spec_verify_ct\": 2}}"),
              HasSubstr("line 1: not a JSON /generate response"));
  EXPECT_THAT(error_for("{\"meta_info\": {\"completion_tokens\": 99999999999999999999, "
                        "\"spec_verify_ct\": 2}}"),
              HasSubstr("meta_info.completion_tokens is"));
}

tau::MeasuredTau measured(const std::string& engine, const std::string& definition, int k,
                          const std::string& sha) {
  tau::MeasuredTau m;
  m.path = engine + ".json";
  m.engine = engine;
  m.tau_definition = definition;
  m.tau_pooled = 2.0;
  if (definition == "macro") m.tau_macro = 2.1;
  m.num_speculative_tokens = k;
  m.drafts = m.draft_tokens = 10;
  if (!sha.empty()) m.prompt_set_sha256 = sha;
  return m;
}

TEST(MeasuredTau, FileRoundTripAndValidation) {
  auto m = measured("sglang", "macro", 15, std::string(64, 'a'));
  m.per_position_acceptance = std::vector<double>(15, 0.5);
  m.requests = 4;
  const auto back = tau::measured_tau_from_json(tau::to_json(m), "m.json");
  EXPECT_EQ(back.engine, "sglang");
  EXPECT_EQ(*back.tau_macro, 2.1);
  EXPECT_EQ(back.block_size(), 16);
  EXPECT_EQ(*back.prompt_set_sha256, std::string(64, 'a'));
  EXPECT_EQ(back.per_position_acceptance.size(), 15u);

  auto broken = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = tau::to_json(m);
    edit(j);
    return error_of([&] { tau::measured_tau_from_json(j, "m.json"); });
  };
  EXPECT_THAT(broken([](auto& j) { j["schema"] = "draftgate.measured_tau/2"; }),
              HasSubstr("m.json: schema \"draftgate.measured_tau/2\" is not"));
  EXPECT_THAT(broken([](auto& j) { j["tau_macro"] = 40.0; }),
              HasSubstr("tau_macro 40 is outside 1…17"));
  EXPECT_THAT(broken([](auto& j) { j["tau_pooled"] = 0.5; }), HasSubstr("outside 1…17"));
  EXPECT_THAT(broken([](auto& j) { j["block_size"] = 15; }),
              HasSubstr("block_size is not num_speculative_tokens + 1"));
  EXPECT_THAT(broken([](auto& j) {
                j["per_position_acceptance"] = {0.5, 0.2};
              }),
              HasSubstr("per_position_acceptance has 2 depths but num_speculative_tokens is 15"));
  EXPECT_THAT(broken([](auto& j) { j["tau_macro"] = nullptr; }),
              HasSubstr("tau_definition is macro but tau_macro is null"));
  EXPECT_THAT(broken([](auto& j) { j["engine"]["name"] = "trtllm"; }),
              HasSubstr("engine \"trtllm\" is not vllm or sglang"));
  EXPECT_THAT(broken([](auto& j) { j.erase("drafts"); }),
              HasSubstr("measured τ file has no \"drafts\""));
}

TEST(MeasuredTau, OnlyLikeIsComparedWithLike) {
  const std::string a(64, 'a'), b(64, 'b');
  const auto golden = measured("vllm", "pooled", 15, a);
  EXPECT_FALSE(tau::unlike(measured("vllm", "pooled", 15, a), golden));
  EXPECT_THAT(*tau::unlike(measured("sglang", "macro", 15, a), golden),
              HasSubstr("measured by sglang but the golden (vllm.json) by vllm"));
  auto pooled_sglang = measured("sglang", "pooled", 15, a);
  EXPECT_THAT(*tau::unlike(pooled_sglang, measured("sglang", "macro", 15, a)),
              HasSubstr("τ pooled but the golden (sglang.json) τ macro"));
  EXPECT_THAT(*tau::unlike(measured("vllm", "pooled", 7, a), golden),
              HasSubstr("measured with 7 speculative tokens (block 8) but the golden (vllm.json) "
                        "with 15 (block 16)"));
  EXPECT_THAT(*tau::unlike(measured("vllm", "pooled", 15, b), golden),
              HasSubstr("prompt set sha256 bbbbbbbbbbbb… but the golden (vllm.json) was "
                        "measured on aaaaaaaaaaaa…"));
  EXPECT_THAT(*tau::unlike(measured("vllm", "pooled", 15, ""), golden),
              HasSubstr("the measurement names no prompt set"));
}

}  // namespace
}  // namespace draftgate
