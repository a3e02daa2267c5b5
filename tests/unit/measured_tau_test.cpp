// Measured τ from serving engines: the Prometheus parser and vLLM counters, SGLang /generate
// responses, the measured-τ file and the like-for-like rule — against hand computations.

#include "draftgate/tau/measured_tau.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "draftgate/tau/prometheus.h"
#include "draftgate/tau/sglang_requests.h"
#include "draftgate/tau/vllm_metrics.h"
#include "draftgate/tau/vllm_requests.h"
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

// Histogram bucket a counts the verify steps that accepted a drafts; depth d's acceptance is the
// share of all steps that accepted ≥ d, summed over the requests (k = 3 here, written out by hand).
TEST(MeasuredTau, PerPositionAcceptanceFromHistograms) {
  std::vector<std::int64_t> at_least(3, 0);
  tau::add_steps_accepting_at_least({4, 3, 2, 1}, at_least);  // 10 steps: ≥1: 6, ≥2: 3, ≥3: 1
  EXPECT_EQ(at_least, (std::vector<std::int64_t>{6, 3, 1}));
  tau::add_steps_accepting_at_least({0, 5}, at_least);  // a shorter histogram: 5 steps, ≥1: 5
  EXPECT_EQ(at_least, (std::vector<std::int64_t>{11, 3, 1}));
  EXPECT_EQ(tau::acceptance_per_position(at_least, 15),
            (std::vector<double>{11.0 / 15, 3.0 / 15, 1.0 / 15}));
}

TEST(PrometheusText, ParsesLabelsEscapesTimestampsAndComments) {
  const auto t = tau::parse_prometheus_text(
      "# HELP a_total Help with \"quotes\".\n# TYPE a_total counter\n# a free comment\n\n"
      "a_total{x=\"q\\\"uote\\\\d\\nl\",y=\"\",} 3.0 1712345678000\r\n"
      "b NaN\nc{le=\"+Inf\"} +Inf\nd 0x1p4\n",
      "m.txt");
  ASSERT_EQ(t.samples.size(), 4u);
  EXPECT_EQ(t.samples[0].name, "a_total");
  EXPECT_EQ(t.samples[0].labels.at("x"), "q\"uote\\d\nl");
  EXPECT_EQ(t.samples[0].labels.at("y"), "");
  EXPECT_EQ(t.samples[0].value, 3.0);
  EXPECT_EQ(t.samples[0].line, 5u);
  EXPECT_TRUE(std::isnan(t.samples[1].value));
  EXPECT_TRUE(std::isinf(t.samples[2].value));
  EXPECT_EQ(t.samples[3].value, 16.0);  // a hexadecimal float with its exponent, as Go reads it
  EXPECT_EQ(t.types.at("a_total"), "counter");
  for (const char* bad :
       {"a{x=\"1\" 2\n", "a{x=1} 2\n", "a 1 2 3\n", "a{x=\"\\q\"} 1\n", "a one\n", "a\n",
        "\x7f\x45LF\x01\x02 1\n", "{x=\"1\"} 2\n", "a{x=\"1\",x=\"2\"} 3\n", "a 0x10\n",
        "a -0X8\n"})  // hexadecimal without an exponent: not Go's float syntax
    EXPECT_THAT(error_of([&] { tau::parse_prometheus_text(bad, "m.txt"); }),
                HasSubstr("m.txt: line 1: "))
        << bad;
}

// What a proxy that asked for OpenMetrics passes on: float-second timestamps, exemplars, "# EOF".
TEST(PrometheusText, ReadsOpenMetricsTimestampsAndExemplars) {
  const auto t = tau::parse_prometheus_text(
      "# TYPE a counter\na_total 7.0 1712345678.125\n"
      "b_total{m=\"x\"} 3 # {trace_id=\"ab\"} 1.0 1712345678.5\nc 2 # {} 4\n# EOF\n",
      "m.txt");
  ASSERT_EQ(t.samples.size(), 3u);
  EXPECT_EQ(t.samples[0].value, 7.0);
  EXPECT_EQ(t.samples[1].labels.at("m"), "x");
  EXPECT_EQ(t.samples[1].value, 3.0);
  EXPECT_EQ(t.samples[2].value, 2.0);
  for (const auto& [bad, says] : std::vector<std::pair<const char*, const char*>>{
           {"a 1 12:00\n", "\"12:00\" is not a timestamp"},
           {"a 1 inf\n", "\"inf\" is not a timestamp"},
           {"a 1 # trace\n", "expected an exemplar's {labels} after #"},
           {"a 1 # {x=\"1\"}\n", "a sample without a value"},
           {"a 1 # {x=\"1\"} 2 3 4\n", "unexpected text after the sample's value"}})
    EXPECT_THAT(error_of([&] { tau::parse_prometheus_text(bad, "m.txt"); }),
                HasSubstr(std::string("m.txt: line 1: ") + says))
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

// A server restarted between the scrapes whose new counters happen to exceed the old ones: the
// run counted 122 drafts, 93 accepted (τ 1 + 93/122 = 1.7623), but after − before is 65 drafts, 59
// accepted (τ 1.9077), and no counter fell. The restart shows in NAME_created and
// process_start_time_seconds.
TEST(VllmMetrics, RestartBetweenScrapesIsRefusedEvenWhenNoCounterFell) {
  const fs::path dir = testing::fresh_dir("vllm_restart");
  const VllmEngineCounts old_process{"Qwen/Qwen3-8B", 0, 57, 171, 34, {20, 10, 4}};
  VllmEngineCounts new_process{"Qwen/Qwen3-8B", 0, 122, 366, 93, {50, 28, 15}};
  auto scrape = [&](const std::string& name, const VllmEngineCounts& e, std::optional<double> t) {
    return tau::read_scrape_file(write_file(dir / name, testing::vllm_scrape({e}, t)));
  };
  auto import = [&](const tau::Scrape& before, const tau::Scrape& after) {
    tau::VllmImport in;
    in.before = before;
    in.after = after;
    return tau::import_vllm_metrics(in);
  };
  // Same process (nothing changed but the counts): the difference is the run.
  EXPECT_DOUBLE_EQ(
      import(scrape("b.txt", old_process, 1.7645e9), scrape("a.txt", new_process, 1.7645e9))
          .tau_pooled,
      1 + 59.0 / 65);
  new_process.created = 1.7646e9;
  EXPECT_THAT(
      error_of([&] { import(scrape("b.txt", old_process, {}), scrape("a.txt", new_process, {})); }),
      HasSubstr("a.txt: the server restarted between the scrapes: "
                "vllm:spec_decode_num_drafts_created{engine=\"0\",model_name=\"Qwen/Qwen3-8B\"} is "
                "1764600000 here but 1764500000 in " +
                (dir / "b.txt").string() + ", so the counters were reset"));
  new_process.created = old_process.created;  // only the process start time tells
  EXPECT_THAT(error_of([&] {
                import(scrape("b.txt", old_process, 1.7645e9),
                       scrape("a.txt", new_process, 1.76461e9));
              }),
              HasSubstr("the server restarted between the scrapes: process_start_time_seconds is "
                        "1764610000 here but 1764500000 in "));
}

// prometheus_client writes a counter's samples NAME_total (declared "# TYPE NAME_total counter" or,
// in newer versions, "# TYPE NAME counter"); an exporter without the suffix writes NAME.
TEST(VllmMetrics, CountersWithAndWithoutTotalSuffix) {
  const fs::path dir = testing::fresh_dir("vllm_suffix");
  const std::string suffixed = testing::vllm_scrape({kAfter[0]});
  std::string bare, family_typed;
  std::istringstream lines(suffixed);
  for (std::string line; std::getline(lines, line);) {
    std::string b = line, f = line;
    for (const std::string& x : {std::string("_total{"), std::string("_total ")})
      for (std::size_t at; (at = b.find(x)) != std::string::npos;) b.erase(at, 6);
    if (f.rfind("# TYPE ", 0) == 0 && f.size() > 14 &&
        f.find("_total counter") != std::string::npos)
      f.erase(f.find("_total counter"), 6);
    bare += b + "\n";
    family_typed += f + "\n";
  }
  ASSERT_EQ(bare.find("_total"), std::string::npos);
  for (const auto& [name, text] :
       {std::pair{"suffixed", suffixed}, {"bare", bare}, {"family", family_typed}}) {
    SCOPED_TRACE(name);
    const auto m = import_vllm(write_file(dir / (std::string(name) + ".txt"), text));
    EXPECT_DOUBLE_EQ(m.tau_pooled, 2.5);
    EXPECT_EQ(m.per_position_acceptance.size(), 3u);
  }
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

  // Tied to a prompt set by meta_info.id (any order), or by order when the ids are SGLang's own
  // (uuid4().hex: the client sent no rid); ids a client chose that name none of the prompts are
  // answers to another prompt set.
  in.prompt_ids = std::vector<std::string>{"p3", "p1", "p2"};
  EXPECT_DOUBLE_EQ(*tau::import_sglang_requests(in).tau_macro, 7.3 / 3);
  in.prompt_ids = std::vector<std::string>{"a", "b", "c"};
  in.prompts_file = "prompts.jsonl";
  EXPECT_THAT(error_of([&] { tau::import_sglang_requests(in); }),
              HasSubstr("response 1 names request \"p1\", and no response names a prompt of "
                        "prompts.jsonl: responses to another prompt set"));
  auto own_ids = three_requests();
  for (std::size_t i = 0; i < own_ids.size(); ++i)
    own_ids[i].id = std::string(31, 'e') + std::to_string(i);
  tau::SglangImport by_order = in;
  by_order.requests = jsonl(dir / "own_ids.jsonl", own_ids);
  EXPECT_DOUBLE_EQ(*tau::import_sglang_requests(by_order).tau_macro, 7.3 / 3);
  by_order.prompt_ids = std::vector<std::string>{"a", "b"};
  EXPECT_THAT(error_of([&] { tau::import_sglang_requests(by_order); }),
              HasSubstr("3 responses but prompts.jsonl holds 2 prompts"));
  in.prompt_ids = std::vector<std::string>{"p1", "p2", "p3", "p4"};
  EXPECT_THAT(error_of([&] { tau::import_sglang_requests(in); }),
              HasSubstr("no response for prompt \"p4\" of prompts.jsonl"));
  in.prompt_ids = std::vector<std::string>{"p1", "p2"};
  EXPECT_THAT(error_of([&] { tau::import_sglang_requests(in); }),
              HasSubstr("response 3 names request \"p3\", which is not a prompt of prompts.jsonl"));
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
  // τ below 1, fewer tokens than verify steps (measured before: τ 0.5 recorded, exit 0).
  EXPECT_THAT(error_for(testing::sglang_response({"p1", 2, 4, 3, {4, 0, 0, 0}})),
              HasSubstr("response 1: 2 tokens in 4 verify steps, but every step commits at least "
                        "one (τ ≥ 1)"));
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
              HasSubstr("integer 99999999999999999999 does not fit a 64-bit signed integer "
                        "(under key \"completion_tokens\")"));
}

// The same three requests under each SGLang version's names (sglang_requests.cpp lists them): one
// τ, k read from the drafted counts in every version, depths wherever a histogram is reported.
TEST(SglangRequests, EveryVersionsNamesGiveTheSameTau) {
  const fs::path dir = testing::fresh_dir("sglang_vintages");
  for (const std::string vintage : {"0.5.10", "0.5.11", "0.5.12", "no-aliases"}) {
    SCOPED_TRACE(vintage);
    auto requests = three_requests();
    for (auto& r : requests) r.vintage = vintage;
    tau::SglangImport in;
    in.requests = jsonl(dir / (vintage + ".jsonl"), requests);
    const auto m = tau::import_sglang_requests(in);
    EXPECT_DOUBLE_EQ(*m.tau_macro, 7.3 / 3);
    EXPECT_DOUBLE_EQ(m.tau_pooled, 88.0 / 36);
    EXPECT_EQ(m.num_speculative_tokens, 3);
    EXPECT_EQ(m.accepted_tokens, 52);  // Σ correct drafts: 24 + 18 + 10
    if (vintage == "0.5.10") {
      EXPECT_TRUE(m.per_position_acceptance.empty());  // that version has no histogram
      EXPECT_THAT(m.sources["num_speculative_tokens"].get<std::string>(),
                  HasSubstr("meta_info.spec_draft_token_num / meta_info.spec_verify_ct"));
    } else {
      EXPECT_THAT(m.per_position_acceptance,
                  ElementsAre(DoubleNear(26.0 / 36, 1e-12), DoubleNear(17.0 / 36, 1e-12),
                              DoubleNear(9.0 / 36, 1e-12)));
    }
    if (vintage == "no-aliases") {
      EXPECT_THAT(m.sources["per_position_acceptance"].get<std::string>(),
                  HasSubstr("meta_info.spec_correct_drafts_histogram"));
    }
  }
}

// A response quoted in sgl-project/sglang#33518 (SGLang at 4ad990ba, DSpark block 5):
// completion_tokens 106 in 43 verify steps, 5 drafts proposed per step.
TEST(SglangRequests, QuotedResponseOfSglang33518) {
  const fs::path dir = testing::fresh_dir("sglang_quoted");
  tau::SglangImport in;
  in.requests = write_file(
      dir / "r.jsonl",
      R"({"text": "…", "meta_info": {"id": "q1", "completion_tokens": 106, )"
      R"("spec_accept_rate": 0.2930232558139535, "spec_accept_length": 2.4651162790697674, )"
      R"("spec_num_correct_drafts": 63, "spec_num_proposed_drafts": 215, "spec_verify_ct": 43, )"
      R"("spec_correct_drafts_histogram": [11, 14, 11, 4, 0, 3]}})"
      "\n");
  const auto m = tau::import_sglang_requests(in);
  EXPECT_DOUBLE_EQ(*m.tau_macro, 106.0 / 43);
  EXPECT_EQ(m.num_speculative_tokens, 5);
  EXPECT_EQ(m.accepted_tokens, 63);
  // Steps accepting ≥ d drafts: 43 − 11 = 32, 18, 7, 3, 3.
  EXPECT_THAT(m.per_position_acceptance,
              ElementsAre(DoubleNear(32.0 / 43, 1e-12), DoubleNear(18.0 / 43, 1e-12),
                          DoubleNear(7.0 / 43, 1e-12), DoubleNear(3.0 / 43, 1e-12),
                          DoubleNear(3.0 / 43, 1e-12)));
}

TEST(SglangRequests, FieldsThatMustAgreeAreCrossChecked) {
  const fs::path dir = testing::fresh_dir("sglang_agree");
  auto first = three_requests()[0];
  first.vintage = "0.5.12";
  const auto good = nlohmann::json::parse(testing::sglang_response(first));
  auto error_for = [&](const std::function<void(nlohmann::json&)>& edit) {
    auto doc = good;
    edit(doc["meta_info"]);
    tau::SglangImport in;
    in.requests = write_file(dir / "r.jsonl", "\n" + doc.dump() + "\n");
    return error_of([&] { tau::import_sglang_requests(in); });
  };
  EXPECT_THAT(error_for([](auto& m) { m["spec_accepted_drafts"] = 23; }),
              HasSubstr("r.jsonl: line 2: meta_info.spec_accepted_drafts disagrees with "
                        "meta_info.spec_num_correct_drafts (SGLang writes the same count under "
                        "both names)"));
  EXPECT_THAT(error_for([](auto& m) {
                m["spec_accept_histogram"] = {4, 4, 5, 3};
              }),
              HasSubstr("meta_info.spec_accept_histogram disagrees with "
                        "meta_info.spec_correct_drafts_histogram"));
  EXPECT_THAT(error_for([](auto& m) {
                m["spec_correct_drafts_histogram"] = m["spec_accept_histogram"] = {4, 4, 5, 3};
              }),
              HasSubstr("line 2: meta_info.spec_correct_drafts_histogram accounts for 23 correct "
                        "drafts, the response's count is 24"));
  EXPECT_THAT(error_for([](auto& m) { m["spec_accept_rate"] = 0.75; }),
              HasSubstr("meta_info.spec_accept_rate 0.75 is not correct / proposed drafts = 0.5"));
  EXPECT_THAT(error_for([](auto& m) {
                m["spec_num_correct_drafts"] = m["spec_accepted_drafts"] = 49;
                m.erase("spec_correct_drafts_histogram");
                m.erase("spec_accept_histogram");
              }),
              HasSubstr("49 correct drafts of only 48 proposed"));
  EXPECT_THAT(error_for([](auto& m) { m["spec_num_correct_drafts"] = -1; }),
              HasSubstr("meta_info.spec_num_correct_drafts is -1, not a count"));
  EXPECT_THAT(error_for([](auto& m) {
                m["spec_correct_drafts_histogram"] = {4, "4", 4, 4};
              }),
              HasSubstr("an entry of spec_correct_drafts_histogram is \"4\", not a count"));
}

std::vector<testing::VllmRequest> three_vllm_requests() {
  // τ_i = 1 + 24/16 = 2.5, 1 + 10/10 = 2.0, 1 + 2/4 = 1.5 → τ macro 2.0, τ pooled 1 + 36/30 = 2.2;
  // steps accepting ≥ 1 / 2 / 3 drafts: 12+6+2 = 20, 8+3+0 = 11, 4+1+0 = 5 of 30.
  return {{"cmpl-1", "Qwen/Qwen3-8B", 16, 24, 48, 3, {4, 4, 4, 4}},
          {"cmpl-2", "Qwen/Qwen3-8B", 10, 10, 30, 3, {4, 3, 2, 1}},
          {"cmpl-3", "Qwen/Qwen3-8B", 4, 2, 12, 3, {2, 2, 0, 0}}};
}

fs::path vllm_jsonl(const fs::path& path, const std::vector<testing::VllmRequest>& responses) {
  std::string text;
  for (const auto& r : responses) text += testing::vllm_response(r);
  return write_file(path, text);
}

TEST(VllmRequests, TauMacroPooledAndDepthsByHand) {
  const fs::path dir = testing::fresh_dir("vllm_requests_ok");
  tau::VllmRequestsImport in;
  in.responses = vllm_jsonl(dir / "r.jsonl", three_vllm_requests());
  const auto m = tau::import_vllm_requests(in);
  EXPECT_EQ(m.engine, "vllm");
  EXPECT_EQ(m.tau_definition, "macro");
  EXPECT_DOUBLE_EQ(*m.tau_macro, 2.0);
  EXPECT_DOUBLE_EQ(m.tau_pooled, 2.2);
  EXPECT_THAT(m.per_position_acceptance,
              ElementsAre(DoubleNear(20.0 / 30, 1e-12), DoubleNear(11.0 / 30, 1e-12),
                          DoubleNear(5.0 / 30, 1e-12)));
  EXPECT_EQ(m.drafts, 30);
  EXPECT_EQ(m.draft_tokens, 90);
  EXPECT_EQ(m.accepted_tokens, 36);
  EXPECT_EQ(*m.requests, 3);
  EXPECT_EQ(m.num_speculative_tokens, 3);
  EXPECT_EQ(*m.model_name, "Qwen/Qwen3-8B");

  // The same counts sparse ({"j": n}), per choice, or with the detailed per-step arrays.
  auto other = three_vllm_requests();
  other[0].sparse_histogram = true;
  other[1].per_choice = true;
  other[2].per_step_accepted = {2, 0, 0, 0};
  other[2].per_step_drafted = {3, 3, 3, 3};
  in.responses = vllm_jsonl(dir / "forms.jsonl", other);
  const auto forms = tau::import_vllm_requests(in);
  EXPECT_DOUBLE_EQ(*forms.tau_macro, 2.0);
  EXPECT_EQ(forms.per_position_acceptance, m.per_position_acceptance);

  // Tied to a prompt set by order: the counts must agree.
  in.prompts = 2;
  in.prompts_file = "prompts.jsonl";
  EXPECT_THAT(error_of([&] { tau::import_vllm_requests(in); }),
              HasSubstr("3 responses but prompts.jsonl holds 2 prompts"));
}

// Responses quoted by vLLM: the example of vllm-project/vllm#48915 (dense histogram) and the
// summary payload of tests/v1/spec_decode/test_request_acceptance.py at 2663fab4 (sparse).
TEST(VllmRequests, QuotedResponsesOfVllm) {
  const fs::path dir = testing::fresh_dir("vllm_requests_quoted");
  tau::VllmRequestsImport in;
  in.responses = write_file(
      dir / "r.jsonl",
      R"({"id": "cmpl-a", "model": "m", "choices": [], "usage": {}, "metrics": )"
      R"({"speculative_decoding": {"mean_acceptance_length": 1.2325581395348837, )"
      R"("draft_acceptance_rate": 0.07751937984496124, "acceptance_histogram": [39, 1, 0, 3], )"
      R"("num_spec_steps": 43, "num_accepted_draft_tokens": 10, "num_draft_tokens": 129, )"
      R"("num_spec_tokens": 3}}})"
      "\n"
      R"({"id": "cmpl-b", "model": "m", "choices": [{"index": 0, "speculative_decoding_stats": )"
      R"({"mean_acceptance_length": 2.8, "draft_acceptance_rate": 0.6, )"
      R"("acceptance_histogram": {"0": 1, "1": 1, "2": 1, "3": 2}, "num_spec_steps": 5, )"
      R"("num_accepted_draft_tokens": 9, "num_draft_tokens": 15, "num_spec_tokens": 3}}]})"
      "\n");
  const auto m = tau::import_vllm_requests(in);
  EXPECT_DOUBLE_EQ(*m.tau_macro, ((1 + 10.0 / 43) + 2.8) / 2);
  EXPECT_DOUBLE_EQ(m.tau_pooled, 1 + 19.0 / 48);
  // Steps accepting ≥ 1 / 2 / 3: (4 + 4), (3 + 3), (3 + 2) of 48.
  EXPECT_THAT(m.per_position_acceptance,
              ElementsAre(DoubleNear(8.0 / 48, 1e-12), DoubleNear(6.0 / 48, 1e-12),
                          DoubleNear(5.0 / 48, 1e-12)));
  EXPECT_EQ(m.draft_tokens, 144);
}

TEST(VllmRequests, MalformedResponsesAreNamed) {
  const fs::path dir = testing::fresh_dir("vllm_requests_bad");
  auto error_for = [&](const std::function<void(std::vector<testing::VllmRequest>&)> edit,
                       std::optional<std::int64_t> k = {}, std::optional<std::string> model = {}) {
    auto requests = three_vllm_requests();
    edit(requests);
    tau::VllmRequestsImport in;
    in.responses = vllm_jsonl(dir / "r.jsonl", requests);
    in.num_speculative_tokens = k;
    in.model_name = std::move(model);
    return error_of([&] { tau::import_vllm_requests(in); });
  };
  auto edited = [&](std::size_t line, const std::function<void(nlohmann::json&)>& edit) {
    std::string text;
    const auto requests = three_vllm_requests();
    for (std::size_t i = 0; i < requests.size(); ++i) {
      auto doc = nlohmann::json::parse(testing::vllm_response(requests[i]));
      if (i + 1 == line) edit(doc);
      text += doc.dump() + "\n";
    }
    tau::VllmRequestsImport in;
    in.responses = write_file(dir / "e.jsonl", text);
    return error_of([&] { tau::import_vllm_requests(in); });
  };
  EXPECT_THAT(edited(2, [](auto& d) { d.erase("metrics"); }),
              HasSubstr("e.jsonl: line 2: the response has no metrics.speculative_decoding (hint: "
                        "serve with --per-request-spec-decode-metrics summary"));
  EXPECT_THAT(
      edited(1,
             [](auto& d) { d["metrics"]["speculative_decoding"]["mean_acceptance_length"] = 3.5; }),
      HasSubstr("line 1: metrics.speculative_decoding.mean_acceptance_length 3.5 is not 1 + "
                "num_accepted_draft_tokens / num_spec_steps = 2.5"));
  EXPECT_THAT(
      edited(1,
             [](auto& d) { d["metrics"]["speculative_decoding"]["draft_acceptance_rate"] = 0.25; }),
      HasSubstr("draft_acceptance_rate 0.25 is not num_accepted_draft_tokens / "
                "num_draft_tokens = 0.5"));
  EXPECT_THAT(
      edited(3, [](auto& d) { d["metrics"]["speculative_decoding"].erase("num_spec_steps"); }),
      HasSubstr("line 3: metrics.speculative_decoding has no num_spec_steps"));
  EXPECT_THAT(edited(3,
                     [](auto& d) {
                       d["metrics"]["speculative_decoding"]["acceptance_histogram"] = {"x", 1};
                     }),
              HasSubstr("an entry of metrics.speculative_decoding.acceptance_histogram is \"x\""));
  EXPECT_THAT(edited(3,
                     [](auto& d) {
                       d["metrics"]["speculative_decoding"]["acceptance_histogram"] = {{"one", 4}};
                     }),
              HasSubstr("has the bucket \"one\", not a number of drafts"));
  EXPECT_THAT(error_for([](auto& r) {
                r[1].histogram = {5, 2, 2, 2};
              }),
              HasSubstr("line 2: metrics.speculative_decoding.acceptance_histogram counts 11 "
                        "steps, num_spec_steps 10"));
  EXPECT_THAT(error_for([](auto& r) {
                r[1].histogram = {4, 4, 1, 1};
              }),
              HasSubstr("acceptance_histogram accounts for 9 accepted drafts, "
                        "num_accepted_draft_tokens 10"));
  EXPECT_THAT(error_for([](auto& r) { r[2].steps = 0; }),
              HasSubstr("line 3: metrics.speculative_decoding.num_spec_steps is 0: no speculative "
                        "step"));
  EXPECT_THAT(error_for([](auto& r) {
                r[2].per_step_accepted = {2, 0, 0};
                r[2].per_step_drafted = {3, 3, 3};
              }),
              HasSubstr("per_step_accepted / per_step_drafted hold 3 / 3 steps, num_spec_steps 4"));
  EXPECT_THAT(error_for([](auto& r) {
                r[2].per_step_accepted = {1, 1, 0, 0};
                r[2].per_step_drafted = {1, 0, 3, 8};
              }),
              HasSubstr("step 1 accepted 1 of 0 drafts"));
  EXPECT_THAT(error_for([](auto& r) { r[1].num_spec_tokens = 4; }),
              HasSubstr("line 2: num_spec_tokens 4, not 3 (num_spec_tokens of the responses)"));
  EXPECT_THAT(error_for([](auto& r) { r[0].num_spec_tokens = 0; }, 5),
              HasSubstr("line 2: num_spec_tokens 3, not 5 (--num-speculative-tokens)"));
  EXPECT_THAT(error_for([](auto& r) {
                for (auto& q : r) q.num_spec_tokens = 0;
              }),
              HasSubstr("do not say how many tokens were drafted per step"));
  EXPECT_THAT(error_for([](auto& r) { r[2].id = "cmpl-1"; }),
              HasSubstr("line 3: a second response with id \"cmpl-1\""));
  EXPECT_THAT(error_for([](auto& r) { r[1].model = "other"; }),
              HasSubstr("line 2: a response of model \"other\", not \"Qwen/Qwen3-8B\""));
  EXPECT_THAT(error_for([](auto&) {}, {}, std::string("x")),
              HasSubstr("line 1: a response of model \"Qwen/Qwen3-8B\", not \"x\" (--model-name)"));
  EXPECT_THAT(error_for([](auto& r) {
                r[1].drafted = 31;
                r[1].accepted = 10;
              }),
              HasSubstr("line 2: 31 draft tokens in 10 steps of at most 3"));
  EXPECT_THAT(error_for([](auto& r) {
                r[1].accepted = 40;
                r[1].histogram = {};
              }),
              HasSubstr("counts 40 accepted of 30 draft tokens"));
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
  EXPECT_EQ(back.formula("macro"), "mean over requests of completion_tokens / verify steps");
  EXPECT_EQ(tau::to_json(m)["tau_formulas"]["pooled"], "Σ completion_tokens / Σ verify steps");
  auto older = tau::to_json(m);
  older.erase("tau_formulas");  // a file written before tau_formulas: its engine's
  EXPECT_EQ(tau::measured_tau_from_json(older, "m.json").formula("pooled"),
            "Σ completion_tokens / Σ verify steps");

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
  EXPECT_THAT(broken([](auto& j) {
                j["tau_formulas"] = {1, 2};
              }),
              HasSubstr("m.json: tau_formulas must be an object"));
  EXPECT_THAT(broken([](auto& j) { j["tau_formulas"]["macro"] = 3; }),
              HasSubstr("measured τ field \"macro\" must be a string"));
}

TEST(MeasuredTau, OnlyLikeIsComparedWithLike) {
  const std::string a(64, 'a'), b(64, 'b');
  const auto golden = measured("vllm", "pooled", 15, a);
  EXPECT_FALSE(tau::unlike(measured("vllm", "pooled", 15, a), golden));
  EXPECT_THAT(*tau::unlike(measured("sglang", "macro", 15, a), golden),
              HasSubstr("measured by sglang but the golden (vllm.json) by vllm"));
  // Compared on the golden's definition: a macro golden needs a τ macro, a pooled golden takes the
  // τ pooled of a measurement that has both.
  auto pooled_sglang = measured("sglang", "pooled", 15, a);
  EXPECT_THAT(*tau::unlike(pooled_sglang, measured("sglang", "macro", 15, a)),
              HasSubstr("the measurement has τ pooled only but the golden (sglang.json) gates on "
                        "τ macro"));
  EXPECT_FALSE(tau::unlike(measured("sglang", "macro", 15, a), pooled_sglang));
  // The recorded formula of the golden's τ must be the measurement's.
  auto other_formula = measured("vllm", "pooled", 15, a);
  other_formula.formulas["pooled"] = "Σ completion_tokens / Σ verify steps";
  EXPECT_THAT(*tau::unlike(other_formula, golden),
              HasSubstr("τ pooled is Σ completion_tokens / Σ verify steps in the measurement but "
                        "the golden (vllm.json) counts 1 + Σ accepted drafts / Σ verify steps"));
  other_formula.formulas["macro"] = "anything";  // not the golden's definition: not compared
  other_formula.formulas.erase("pooled");
  EXPECT_FALSE(tau::unlike(other_formula, golden));
  EXPECT_THAT(*tau::unlike(measured("vllm", "pooled", 7, a), golden),
              HasSubstr("measured with 7 speculative tokens (block 8) but the golden (vllm.json) "
                        "with 15 (block 16)"));
  EXPECT_THAT(*tau::unlike(measured("vllm", "pooled", 15, b), golden),
              HasSubstr("prompt set sha256 bbbbbbbbbbbb… but the golden (vllm.json) was "
                        "measured on aaaaaaaaaaaa…"));
  EXPECT_THAT(*tau::unlike(measured("vllm", "pooled", 15, ""), golden),
              HasSubstr("the measurement names no prompt set"));
  // Another served model is another target (it passed: the names were recorded, not compared);
  // a file that names none cannot be told apart.
  auto on_8b = golden, on_4b = measured("vllm", "pooled", 15, a), unnamed = on_4b;
  on_8b.model_name = "Qwen/Qwen3-8B";
  on_4b.model_name = "Qwen/Qwen3-4B";
  EXPECT_THAT(*tau::unlike(on_4b, on_8b),
              HasSubstr("measured on the model \"Qwen/Qwen3-4B\" but the golden (vllm.json) on "
                        "\"Qwen/Qwen3-8B\""));
  EXPECT_FALSE(tau::unlike(on_8b, on_8b));
  EXPECT_FALSE(tau::unlike(unnamed, on_8b));
}

}  // namespace
}  // namespace draftgate
