// `draftgate tau measure` against the stand-in engine (tests/support/engine_stand_in.py) of every
// protocol version: τ equal to the one computed here from the counts the stand-in served, the
// same τ when its saved answers go through `tau import`, min_tau gating on the result, and a
// transient 503 cured by a retry. The hostile servers are in hostile_input_catalogue_test.cpp
// (LiveServers/HostileInput).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "chat_checkpoint.h"
#include "engine_stand_in.h"
#include "run_cli.h"
#include "test_files.h"

namespace draftgate {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_draftgate;
using testing::write_file;
namespace fs = std::filesystem;

const std::string kModel = "Qwen/Qwen3-8B";

fs::path prompt_set(const fs::path& dir) {
  return write_file(dir / "prompts.jsonl",
                    "{\"id\": \"p1\", \"input_ids\": [1, 2, 3]}\n"
                    "{\"id\": \"p2\", \"input_ids\": [4, 5]}\n"
                    "{\"id\": \"p3\", \"input_ids\": [9, 9, 9, 9]}\n"
                    "{\"id\": \"p4\", \"input_ids\": [17]}\n"
                    "{\"id\": \"p5\", \"input_ids\": [2, 30, 7]}\n"
                    "{\"id\": \"p6\", \"input_ids\": [11, 12]}\n");
}

// τ from the counts the stand-in logged, straight from the engines' definitions: SGLang's
// per-request τ is completion_tokens / verify steps, vLLM's 1 + accepted drafts / steps; pooled
// divides the sums; depth d's acceptance is the share of steps that accepted ≥ d drafts.
struct Expected {
  double macro = 0, pooled = 0;
  std::vector<double> depths;
  std::int64_t steps = 0, requests = 0;
};

Expected expected_from(const fs::path& served_log, const std::string& engine, int k) {
  Expected e;
  double tokens = 0;
  std::vector<double> at_least(static_cast<std::size_t>(k), 0);
  std::ifstream in(served_log);
  for (std::string line; std::getline(in, line);) {
    const json r = json::parse(line);
    const double steps = r["steps"].get<double>();
    const double tau = engine == "sglang" ? r["completion_tokens"].get<double>() / steps
                                          : 1 + r["accepted"].get<double>() / steps;
    e.macro += tau;
    tokens += tau * steps;
    e.steps += r["steps"].get<std::int64_t>();
    ++e.requests;
    const auto h = r["histogram"].get<std::vector<double>>();
    for (std::size_t d = 1; d < h.size(); ++d)
      for (std::size_t a = d; a < h.size(); ++a) at_least[d - 1] += h[a];
  }
  e.macro /= static_cast<double>(e.requests);
  e.pooled = tokens / static_cast<double>(e.steps);
  for (double n : at_least) e.depths.push_back(n / static_cast<double>(e.steps));
  return e;
}

void expect_near_all(const json& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i].get<double>(), want[i], 1e-12) << what << " depth " << i + 1;
}

struct Vintage {
  std::string label, engine, vintage, definition;
  bool depths = true;
};
void PrintTo(const Vintage& v, std::ostream* os) { *os << v.label; }

class EveryVintage : public ::testing::TestWithParam<Vintage> {};

// One command measures τ on each version's server; the saved answers import to the same τ.
TEST_P(EveryVintage, MeasuresTheServedTauAndImportsToTheSame) {
  const Vintage& v = GetParam();
  if (testing::stand_in_python().empty()) GTEST_SKIP() << "python3 not found";
  const fs::path dir = testing::fresh_dir("tau_measure_" + v.label);
  const fs::path prompts = prompt_set(dir);
  fs::create_directories(dir / "saved");
  const testing::EngineStandIn server(dir / "server", "--engine " + v.engine + " --vintage " +
                                                          v.vintage + " --served-log " +
                                                          (dir / "served.jsonl").string());
  ASSERT_GT(server.port(), 0) << "the stand-in did not start";
  const fs::path out = dir / "measured.json";
  const auto r =
      run_draftgate("tau measure --engine " + v.engine + " --url " + server.url() + " --prompts " +
                    prompts.string() + " --out " + out.string() + " --model-name " + kModel +
                    " --concurrency 2 --max-new 64" + " --save-dir " + (dir / "saved").string());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("measured τ " + out.string() + ": " + v.engine + " "));
  const Expected e = expected_from(dir / "served.jsonl", v.engine, 3);
  ASSERT_EQ(e.requests, 6);
  const json m = json::parse(std::ifstream(out));
  EXPECT_EQ(m["schema"], "draftgate.measured_tau/1");
  EXPECT_EQ(m["engine"]["name"], v.engine);
  EXPECT_EQ(m["engine"]["version"], v.vintage);
  EXPECT_EQ(m["model_name"], kModel);
  EXPECT_EQ(m["tau_definition"], v.definition);
  EXPECT_EQ(m["num_speculative_tokens"], 3);
  EXPECT_EQ(m["drafts"], e.steps);
  EXPECT_NEAR(m["tau_pooled"].get<double>(), e.pooled, 1e-12);
  if (v.definition == "macro")
    EXPECT_NEAR(m["tau_macro"].get<double>(), e.macro, 1e-12);
  else
    EXPECT_TRUE(m["tau_macro"].is_null());
  expect_near_all(m["per_position_acceptance"], v.depths ? e.depths : std::vector<double>{},
                  "per_position_acceptance");
  EXPECT_EQ(m["prompt_set"]["prompts"], 6);
  EXPECT_EQ(m["inputs"]["server"], server.url());
  EXPECT_TRUE(m["inputs"]["speculative_config"].is_object());

  // The same answers through `tau import`: the same τ.
  const std::string saved = (dir / "saved").string();
  const std::string source =
      v.engine == "sglang"      ? "--sglang-requests " + saved + "/responses.jsonl"
      : v.definition == "macro" ? "--vllm-responses " + saved + "/responses.jsonl"
                                : "--vllm-metrics " + saved + "/metrics-after.txt --before " +
                                      saved + "/metrics-before.txt";
  const fs::path imported = dir / "imported.json";
  const auto i = run_draftgate("tau import " + source + " --prompts " + prompts.string() +
                               " --out " + imported.string());
  ASSERT_EQ(i.exit_code, 0) << i.out << i.err;
  const json n = json::parse(std::ifstream(imported));
  EXPECT_EQ(n["tau_pooled"], m["tau_pooled"]);
  EXPECT_EQ(n["tau_macro"], m["tau_macro"]);
  EXPECT_EQ(n["per_position_acceptance"], m["per_position_acceptance"]);
  EXPECT_EQ(n["drafts"], m["drafts"]);
  EXPECT_EQ(n["prompt_set"]["sha256"], m["prompt_set"]["sha256"]);

  // min_tau gates on the measurement: it passes a golden recorded from it and fails one whose
  // τ is a third higher than measured.
  const fs::path golden = dir / "golden.json";
  ASSERT_EQ(run_draftgate("golden record --measured " + out.string() + " --out " + golden.string())
                .exit_code,
            0);
  const std::string check =
      "check --only min_tau --measured " + out.string() + " --golden " + golden.string();
  const auto pass = run_draftgate(check);
  EXPECT_EQ(pass.exit_code, 0) << pass.out << pass.err;
  // vLLM's τ pooled is its counts' (the file is refused otherwise): the golden's accepted drafts
  // are raised with it, by a third of a token a step.
  json g = json::parse(std::ifstream(golden));
  json& reference = g["measured"];
  const double raised = v.engine == "vllm" ? reference["drafts"].get<double>() / 3 : 0;
  const double was = reference["tau_pooled"].get<double>();
  if (v.engine == "vllm") {
    reference["accepted_tokens"] =
        reference["accepted_tokens"].get<std::int64_t>() + static_cast<std::int64_t>(raised);
    reference["tau_pooled"] =
        1 + reference["accepted_tokens"].get<double>() / reference["drafts"].get<double>();
  } else {
    reference["tau_pooled"] = was * 4 / 3;
  }
  if (reference["tau_macro"].is_number())
    reference["tau_macro"] =
        reference["tau_macro"].get<double>() + reference["tau_pooled"].get<double>() - was;
  write_file(golden, g.dump());
  const auto fail = run_draftgate(check);
  EXPECT_EQ(fail.exit_code, 1) << fail.out << fail.err;
}

INSTANTIATE_TEST_SUITE_P(
    TauMeasure, EveryVintage,
    ::testing::Values(Vintage{"sglang_0_5_10", "sglang", "0.5.10", "macro", false},
                      Vintage{"sglang_0_5_11", "sglang", "0.5.11", "macro"},
                      Vintage{"sglang_0_5_12", "sglang", "0.5.12", "macro"},
                      Vintage{"vllm_per_request", "vllm", "per-request", "macro"},
                      Vintage{"vllm_metrics", "vllm", "metrics", "pooled"},
                      Vintage{"vllm_metrics_without_total", "vllm", "metrics-bare", "pooled"}),
    [](const auto& p) { return p.param.label; });

// A 503 answered once per request (a worker restarting) is retried, and τ is the served one.
TEST(TauMeasure, RetriesATransient503AndMeasuresTheCorrectTau) {
  if (testing::stand_in_python().empty()) GTEST_SKIP() << "python3 not found";
  for (const std::string engine : {"sglang", "vllm"}) {
    const fs::path dir = testing::fresh_dir("tau_measure_503_" + engine);
    const fs::path prompts = prompt_set(dir);
    const testing::EngineStandIn server(
        dir / "server",
        "--engine " + engine + " --vintage " + (engine == "sglang" ? "0.5.12" : "per-request") +
            " --fault transient-503 --served-log " + (dir / "served.jsonl").string());
    ASSERT_GT(server.port(), 0);
    const fs::path out = dir / "measured.json";
    const auto r = run_draftgate("tau measure --engine " + engine + " --url " + server.url() +
                                 " --prompts " + prompts.string() + " --out " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const Expected e = expected_from(dir / "served.jsonl", engine, 3);
    const json m = json::parse(std::ifstream(out));
    EXPECT_NEAR(m["tau_macro"].get<double>(), e.macro, 1e-12) << engine;
    EXPECT_EQ(m["requests"], 6) << engine;
  }
}

// A server started with --api-key wants "Authorization: Bearer KEY" (vLLM on /v1, SGLang on every
// route but /metrics and /health): the key is read from the variable --api-key-env names, never
// from the command line; without it, or with the wrong one, the refusal says what to do.
TEST(TauMeasure, SendsTheApiKeyFromTheEnvironment) {
  if (testing::stand_in_python().empty()) GTEST_SKIP() << "python3 not found";
  for (const std::string engine : {"sglang", "vllm"}) {
    const fs::path dir = testing::fresh_dir("tau_measure_api_key_" + engine);
    const fs::path prompts = prompt_set(dir);
    const testing::EngineStandIn server(
        dir / "server", "--engine " + engine + " --vintage " +
                            (engine == "sglang" ? "0.5.12" : "metrics") +
                            " --api-key s3cret --served-log " + (dir / "served.jsonl").string());
    ASSERT_GT(server.port(), 0);
    const fs::path out = dir / "measured.json";
    const std::string measure = "tau measure --engine " + engine + " --url " + server.url() +
                                " --prompts " + prompts.string() + " --out " + out.string();
    const auto without = run_draftgate(measure);
    EXPECT_EQ(without.exit_code, 2) << without.out << without.err;
    EXPECT_THAT(without.err, HasSubstr("HTTP status 401"));
    EXPECT_THAT(without.err, HasSubstr("pass --api-key-env NAME"));
    ::setenv("DG_TEST_API_KEY", "wrong", 1);
    const auto wrong = run_draftgate(measure + " --api-key-env DG_TEST_API_KEY");
    EXPECT_EQ(wrong.exit_code, 2) << wrong.out << wrong.err;
    EXPECT_THAT(wrong.err, HasSubstr("refused the API key sent"));
    ::unsetenv("DG_TEST_API_KEY");
    const auto unset = run_draftgate(measure + " --api-key-env DG_TEST_API_KEY");
    EXPECT_EQ(unset.exit_code, 2);
    EXPECT_THAT(unset.err, HasSubstr("the environment variable DG_TEST_API_KEY is not set"));
    EXPECT_FALSE(fs::exists(out));
    ::setenv("DG_TEST_API_KEY", "s3cret", 1);
    const auto r = run_draftgate(measure + " --api-key-env DG_TEST_API_KEY");
    ::unsetenv("DG_TEST_API_KEY");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const Expected e = expected_from(dir / "served.jsonl", engine, 3);
    EXPECT_NEAR(json::parse(std::ifstream(out))["tau_pooled"].get<double>(), e.pooled, 1e-12)
        << engine;
  }
}

// vLLM serving a model under several names (`--served-model-name primary Qwen/Qwen3-8B`) labels its
// counters and answers with the first; asked for by the second, the model is measured all the same
// (it was "speculative decoding is off"). A /metrics scrape answered 503 once is retried. The file
// names the model as its counters and answers do, so the saved files import to the same model.
TEST(TauMeasure, MeasuresAVllmModelByItsSecondServedNameAndRetriesMetrics) {
  if (testing::stand_in_python().empty()) GTEST_SKIP() << "python3 not found";
  for (const std::string vintage : {"metrics", "per-request"}) {
    const fs::path dir = testing::fresh_dir("tau_measure_alias_" + vintage);
    const fs::path prompts = prompt_set(dir);
    const testing::EngineStandIn server(
        dir / "server", "--engine vllm --vintage " + vintage +
                            " --served-first primary --fault metrics-503 --served-log " +
                            (dir / "served.jsonl").string());
    ASSERT_GT(server.port(), 0);
    const fs::path out = dir / "measured.json", saved = dir / "saved";
    fs::create_directories(saved);
    const auto r = run_draftgate("tau measure --engine vllm --url " + server.url() + " --prompts " +
                                 prompts.string() + " --out " + out.string() + " --model-name " +
                                 kModel + " --save-dir " + saved.string());
    ASSERT_EQ(r.exit_code, 0) << vintage << r.out << r.err;
    const Expected e = expected_from(dir / "served.jsonl", "vllm", 3);
    const json m = json::parse(std::ifstream(out));
    EXPECT_NEAR(m["tau_pooled"].get<double>(), e.pooled, 1e-12) << vintage;
    EXPECT_EQ(m["drafts"], e.steps) << vintage;
    EXPECT_EQ(m["model_name"], "primary") << vintage;
    const fs::path imported = dir / "imported.json";
    const auto i = run_draftgate(
        "tau import " +
        (vintage == "metrics" ? "--vllm-metrics " + (saved / "metrics-after.txt").string() +
                                    " --before " + (saved / "metrics-before.txt").string()
                              : "--vllm-responses " + (saved / "responses.jsonl").string()) +
        " --prompts " + prompts.string() + " --out " + imported.string());
    ASSERT_EQ(i.exit_code, 0) << vintage << i.err;
    const json back = json::parse(std::ifstream(imported));
    EXPECT_EQ(back["model_name"], "primary") << vintage;
    EXPECT_EQ(back["tau_pooled"], m["tau_pooled"]) << vintage;
  }
}

// SGLang serving a model under a served_model_name of its own: measured by either name, the file
// names the model loaded (model_path), so two servers of one model measure comparably.
TEST(TauMeasure, NamesAnSglangModelByItsPathWhateverItsServedName) {
  if (testing::stand_in_python().empty()) GTEST_SKIP() << "python3 not found";
  const fs::path dir = testing::fresh_dir("tau_measure_sglang_alias");
  const fs::path prompts = prompt_set(dir);
  const testing::EngineStandIn server(dir / "server",
                                      "--engine sglang --vintage 0.5.12 --served-first my-alias");
  ASSERT_GT(server.port(), 0);
  for (const std::string& name : {std::string(kModel), std::string("my-alias")}) {
    const fs::path out = dir / "measured.json";
    fs::remove(out);
    const auto r =
        run_draftgate("tau measure --engine sglang --url " + server.url() + " --prompts " +
                      prompts.string() + " --out " + out.string() + " --model-name " + name);
    ASSERT_EQ(r.exit_code, 0) << name << r.err;
    EXPECT_EQ(json::parse(std::ifstream(out))["model_name"], kModel) << name;
  }
}

// Quirks of a server that still serve the right answers, and τ is the served one: an older vLLM
// answering /metrics with a redirect to /metrics/ on the same server (a redirect to another server
// is refused: the hostile catalogue), a server (or a proxy before it) that compresses its answers,
// asked or not.
TEST(TauMeasure, MeasuresTheServedTauThroughAServersQuirks) {
  if (testing::stand_in_python().empty()) GTEST_SKIP() << "python3 not found";
  for (const std::string fault : {"metrics-redirect", "gzip"}) {
    const fs::path dir = testing::fresh_dir("tau_measure_" + fault);
    const fs::path prompts = prompt_set(dir);
    const testing::EngineStandIn server(dir / "server", "--engine vllm --vintage metrics --fault " +
                                                            fault + " --served-log " +
                                                            (dir / "served.jsonl").string());
    ASSERT_GT(server.port(), 0) << fault;
    const fs::path out = dir / "measured.json";
    const auto r = run_draftgate("tau measure --engine vllm --url " + server.url() + " --prompts " +
                                 prompts.string() + " --out " + out.string());
    ASSERT_EQ(r.exit_code, 0) << fault << r.out << r.err;
    const Expected e = expected_from(dir / "served.jsonl", "vllm", 3);
    EXPECT_NEAR(json::parse(std::ifstream(out))["tau_pooled"].get<double>(), e.pooled, 1e-12)
        << fault;
  }
}

// Text and messages prompts are rendered by draftgate (the --tokenizer checkpoint's tokenizer.json
// and chat template, --enable-thinking) and sent as the token ids `tokenize` gives for them; the
// measured-τ file records the rendering. A conversation of several user turns is refused.
TEST(TauMeasure, SendsTextAndMessagesPromptsAsTheirRenderedIds) {
  if (testing::stand_in_python().empty()) GTEST_SKIP() << "python3 not found";
  const fs::path dir = testing::fresh_dir("tau_measure_rendered");
  const fs::path tok = testing::write_chat_checkpoint(dir / "tok");
  const std::string user = R"([{"role": "user", "content": "hi there"}])";
  const fs::path prompts =
      write_file(dir / "prompts.jsonl", "{\"id\": \"m\", \"messages\": " + user +
                                            "}\n{\"id\": \"t\", \"text\": \"hello\"}\n");
  const testing::EngineStandIn server(
      dir / "server",
      "--engine sglang --vintage 0.5.12 --served-log " + (dir / "served.jsonl").string());
  ASSERT_GT(server.port(), 0);
  const fs::path out = dir / "measured.json";
  const auto r = run_draftgate("tau measure --engine sglang --url " + server.url() + " --prompts " +
                               prompts.string() + " --tokenizer " + tok.string() +
                               " --enable-thinking false --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto ids_of = [&](const std::string& flag, const fs::path& file) {
    const std::string thinking = flag == "--messages" ? " --enable-thinking false" : "";
    const auto t = run_draftgate("tokenize --tokenizer " + tok.string() + " " + flag + " " +
                                 file.string() + thinking + " --json");
    EXPECT_EQ(t.exit_code, 0) << t.err;
    return json::parse(t.out)["ids"];
  };
  std::map<std::string, json> sent;
  std::ifstream served(dir / "served.jsonl");
  for (std::string line; std::getline(served, line);) {
    const json s = json::parse(line);
    sent[s["id"].get<std::string>()] = s["input_ids"];
  }
  EXPECT_EQ(sent.at("m"), ids_of("--messages", write_file(dir / "m.json", user)));
  EXPECT_EQ(sent.at("t"), ids_of("--text-file", write_file(dir / "t.txt", "hello")));
  const json m = json::parse(std::ifstream(out));
  const json& rendering = m["prompt_set"]["rendering"];
  ASSERT_TRUE(rendering.is_object()) << m["prompt_set"];
  EXPECT_EQ(rendering["enable_thinking"], false);
  EXPECT_EQ(rendering["tokenizer_sha256"].get<std::string>().size(), 64u);

  write_file(prompts,
             "{\"id\": \"c\", \"messages\": [{\"role\": \"user\", \"content\": \"a\"}, "
             "{\"role\": \"user\", \"content\": \"b\"}]}\n");
  const auto turns = run_draftgate("tau measure --engine sglang --url " + server.url() +
                                   " --prompts " + prompts.string() + " --tokenizer " +
                                   tok.string() + " --out " + (dir / "turns.json").string());
  EXPECT_EQ(turns.exit_code, 2) << turns.out << turns.err;
  EXPECT_THAT(turns.err, HasSubstr("prompt \"c\" has 2 user turns; tau measure sends one request "
                                   "per prompt"));
}

// Flags checked before any request: the engine, the URL's scheme, the prompt set.
TEST(TauMeasure, RefusesBadFlagsBeforeSendingAnything) {
  const fs::path dir = testing::fresh_dir("tau_measure_flags");
  const fs::path prompts = prompt_set(dir);
  const std::string out = " --out " + (dir / "m.json").string();
  auto r = run_draftgate("tau measure --engine trtllm --url http://127.0.0.1:1 --prompts " +
                         prompts.string() + out);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--engine"));
  r = run_draftgate("tau measure --engine vllm --url file:///etc/passwd --prompts " +
                    prompts.string() + out);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--url: \"file:///etc/passwd\" is not an http:// or https:// URL"));
  // Credentials in the URL would be printed and recorded; a query or fragment would precede the
  // endpoints' paths (measured before: both sent, the password in the measured-τ file).
  r = run_draftgate("tau measure --engine vllm --url http://admin:hunter2@127.0.0.1:1 --prompts " +
                    prompts.string() + out);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--url: the URL carries credentials"));
  EXPECT_THAT(r.err, Not(HasSubstr("hunter2")));
  for (const std::string url : {"http://127.0.0.1:1/?a=b", "http://127.0.0.1:1#x", "http://"}) {
    r = run_draftgate("tau measure --engine vllm --url " + url + " --prompts " + prompts.string() +
                      out);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr("is not a server address")) << url;
  }
  r = run_draftgate("tau measure --engine vllm --url http://127.0.0.1:1 --prompts " +
                    prompts.string() + " --out " + prompts.string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = run_draftgate("tau measure --engine sglang --url http://127.0.0.1:1 --prompts " +
                    prompts.string() + out);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("http://127.0.0.1:1/get_server_info: cannot reach the server"));
  EXPECT_FALSE(fs::exists(dir / "m.json"));
}

}  // namespace
}  // namespace draftgate
