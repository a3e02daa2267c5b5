// Driving a live engine for `tau measure`. The endpoints and fields, from the engines' sources:
//   SGLang (sgl-project/sglang commit 0025436e, python/sglang/srt/entrypoints/http_server.py):
//     GET /get_server_info = the ServerArgs dataclass (python/sglang/srt/server_args.py:
//     model_path, served_model_name, speculative_algorithm — None when speculative decoding is
//     off —, speculative_num_steps, speculative_eagle_topk, speculative_num_draft_tokens,
//     speculative_draft_model_path) plus "version"; GET|POST /flush_cache (400 while requests
//     run); POST /generate with GenerateReqInput {rid, input_ids, sampling_params}, answered with
//     meta_info whose "id" is the rid.
//   vLLM (vllm-project/vllm commit 6cf7b26b, vllm/entrypoints/openai/completion/serving.py and
//     engine/serving.py): POST /v1/completions, the response's "id" is "cmpl-" + the X-Request-Id
//     header (_base_request_id); GET /v1/models {data: [{id, root, …}]} and GET /version
//     {version} (vllm/entrypoints/openai/api_server.py, show_available_models / show_version, at
//     048027fb); the vllm:spec_decode_* counters on /metrics, labelled per engine when the stat
//     logger starts, exist only with a speculative config (vllm/v1/metrics/loggers.py passes
//     vllm_config.speculative_config to SpecDecodingProm, vllm/v1/spec_decode/metrics.py).

#include "draftgate/tau/live_measure.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <set>

#include "draftgate/error.h"
#include "draftgate/tau/engine_http.h"
#include "draftgate/tau/http_scrape.h"
#include "draftgate/tau/sglang_requests.h"
#include "draftgate/tau/vllm_metrics.h"
#include "draftgate/tau/vllm_requests.h"

namespace draftgate::tau {
namespace {
using nlohmann::json;

std::optional<std::string> string_at(const json& o, const char* key) {
  if (!o.is_object() || !o.contains(key) || !o.at(key).is_string()) return std::nullopt;
  return o.at(key).get<std::string>();
}

json object_answer(json doc, const std::string& url, const std::string& engine) {
  if (!doc.is_object())
    throw Error(url, "the answer is " + describe_json(doc) + ", not a JSON object",
                "is this " + engine + "'s URL?");
  return doc;
}

std::string joined_lines(const std::vector<std::string>& docs) {
  std::string s;
  for (const auto& d : docs) s += d + "\n";
  return s;
}

// Unique per run, so two measurements of one server never share a request id.
std::string run_tag() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::to_string(::getpid()) + "-" +
         std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
}

json request_inputs(const LiveMeasure& in) {
  return {{"temperature", 0},
          {"max_new_tokens", in.max_new_tokens},
          {"concurrency", in.concurrency},
          {"timeout_s", in.timeout_seconds}};
}

LiveRun measure_sglang(const LiveMeasure& in, const EngineHttp& http) {
  const std::string info_url = http.url("/get_server_info");
  const json info = object_answer(http.call("/get_server_info"), info_url, "an SGLang server");
  const auto algorithm = string_at(info, "speculative_algorithm");
  if (!algorithm || algorithm->empty() || *algorithm == "NONE")
    throw Error(info_url,
                "speculative decoding is off (speculative_algorithm is " +
                    describe_json(info.value("speculative_algorithm", json())) + ")",
                "serve with --speculative-algorithm DFLASH --speculative-draft-model-path DRAFTER");
  const auto path = string_at(info, "model_path");
  auto served = string_at(info, "served_model_name");  // ServerArgs: model_path when not set
  if (!served) served = path;
  if (!served) throw Error(info_url, "names no model (no served_model_name or model_path)");
  if (in.model_name && *in.model_name != *served && *in.model_name != path.value_or(""))
    throw Error(info_url,
                "serves \"" + *served + "\", not \"" + *in.model_name + "\" (--model-name)",
                "point --url at the server of that model");
  // k = speculative_num_draft_tokens − 1 (the verify block holds the bonus position too).
  std::optional<std::int64_t> k;
  // None until SGLang sets it from the algorithm; anything else but a count is not its field.
  if (info.contains("speculative_num_draft_tokens") &&
      !info.at("speculative_num_draft_tokens").is_null() &&
      !info.at("speculative_num_draft_tokens").is_number_unsigned())
    throw Error(info_url,
                "speculative_num_draft_tokens is " +
                    describe_json(info.at("speculative_num_draft_tokens")) + ", not a count",
                "is this SGLang's /get_server_info?");
  if (info.contains("speculative_num_draft_tokens") &&
      info.at("speculative_num_draft_tokens").is_number_unsigned()) {
    const auto tokens = info.at("speculative_num_draft_tokens").get<std::uint64_t>();
    if (tokens < 2 || tokens > 4097)
      throw Error(info_url,
                  "speculative_num_draft_tokens is " + std::to_string(tokens) + ", not 2…4097");
    k = static_cast<std::int64_t>(tokens) - 1;
  }
  std::string k_from = info_url + " speculative_num_draft_tokens − 1";
  if (in.num_speculative_tokens) {
    if (k && *k != *in.num_speculative_tokens)
      throw Error("--num-speculative-tokens",
                  std::to_string(*in.num_speculative_tokens) + ", but " + info_url +
                      " serves speculative_num_draft_tokens " + std::to_string(*k + 1) + " (k " +
                      std::to_string(*k) + ")",
                  "leave --num-speculative-tokens out: the server says it");
    if (!k) k_from = "--num-speculative-tokens";
    k = in.num_speculative_tokens;
  }
  json config = json::object();
  for (const char* key :
       {"speculative_algorithm", "speculative_num_steps", "speculative_eagle_topk",
        "speculative_num_draft_tokens", "speculative_draft_model_path"})
    if (info.contains(key) && (info.at(key).is_primitive())) config[key] = info.at(key);

  http.call_text("/flush_cache",
                 "SGLang flushes its cache only while no request runs: measure on "
                 "an idle server");
  const auto& prompts = in.prompts->prompts;
  const std::string generate = http.url("/generate");
  std::vector<std::string> docs(prompts.size());
  for_each_request(prompts.size(), in.concurrency, [&](std::size_t i) {
    const decode::Prompt& p = prompts[i];
    const json body = {
        {"rid", p.id},
        {"input_ids", p.input_ids},
        {"sampling_params", {{"temperature", 0}, {"max_new_tokens", in.max_new_tokens}}}};
    const json r = http.call("/generate", body);
    // SGLang answers one request with one object whose meta_info.id is its rid (an array answers
    // a batch, which draftgate never sends).
    const std::string prompt = "the answer to prompt \"" + p.id + "\"";
    if (!r.is_object() || !r.contains("meta_info") || !r.at("meta_info").is_object())
      throw Error(generate, prompt + " is not one /generate answer (an object with meta_info)",
                  "is this SGLang's URL, with nothing in front of it?");
    const json& meta = r.at("meta_info");
    if (!meta.contains("id"))
      throw Error(generate, prompt + " names no request (no meta_info.id)",
                  "SGLang names its request in every answer: is something in front of it?");
    if (meta.at("id") != p.id)
      throw Error(generate, prompt + " is for request " + describe_json(meta.at("id")),
                  "a proxy or another client is mixing answers; measure on a server of its own");
    docs[i] = r.dump();
  });

  SglangImport responses_in;
  responses_in.requests = generate;
  responses_in.num_speculative_tokens = k;
  responses_in.engine_version = string_at(info, "version");
  responses_in.prompt_ids.emplace();
  for (const auto& p : prompts) responses_in.prompt_ids->push_back(p.id);
  responses_in.prompts_file = in.prompts->path;
  responses_in.text = joined_lines(docs);
  responses_in.num_speculative_tokens_from = k_from;
  LiveRun run;
  run.measured = import_sglang_requests(responses_in);
  // The model loaded, whichever of its names was asked for: two servers of one model under other
  // served names measure comparably.
  run.measured.model_name = path ? path : served;
  run.measured.inputs = {{"server", http.base()},
                         {"requests", generate},
                         {"server_info", info_url},
                         {"speculative_config", config},
                         {"request", request_inputs(in)}};
  run.responses = *responses_in.text;
  return run;
}

bool has_request_metrics(const json& r) {
  if (r.contains("metrics") && r.at("metrics").is_object() &&
      r.at("metrics").contains("speculative_decoding"))
    return true;
  if (r.contains("choices") && r.at("choices").is_array())
    for (const json& c : r.at("choices"))
      if (c.is_object() && c.contains("speculative_decoding_stats")) return true;
  return false;
}

bool counts_drafts(const Scrape& s, const std::string& model) {
  for (const auto& x : s.text.samples)
    if (x.name.rfind("vllm:spec_decode_num_drafts", 0) == 0) {
      auto m = x.labels.find("model_name");
      if (m == x.labels.end() || m->second == model) return true;
    }
  return false;
}

LiveRun measure_vllm(const LiveMeasure& in, const EngineHttp& http) {
  const std::string models_url = http.url("/v1/models");
  const json models = object_answer(http.call("/v1/models"), models_url, "a vLLM server");
  std::vector<std::string> ids;
  if (models.contains("data") && models.at("data").is_array())
    for (const json& card : models.at("data"))
      if (auto id = string_at(card, "id")) ids.push_back(*id);
  if (ids.empty()) throw Error(models_url, "lists no model (data[].id)", "is this vLLM's URL?");
  std::string all;
  for (const auto& id : ids) all += (all.empty() ? "\"" : ", \"") + id + "\"";
  // vLLM labels its counters with the first served name, and answers for the base model under it
  // (get_served_model_name: served_model_name[0]; OpenAIServingModels.model_name): the other names
  // /v1/models lists are aliases of it or LoRA adapters.
  const std::string labelled = ids.front();
  std::string model;
  if (in.model_name) {
    if (std::find(ids.begin(), ids.end(), *in.model_name) == ids.end())
      throw Error(models_url, "serves " + all + ", not \"" + *in.model_name + "\" (--model-name)",
                  "point --url at the server of that model");
    model = *in.model_name;
  } else if (ids.size() == 1) {
    model = ids.front();
  } else {
    throw Error(models_url, "serves several models (" + all + ")", "choose one with --model-name");
  }
  const std::string version_url = http.url("/version");
  const auto version =
      string_at(object_answer(http.call("/version"), version_url, "a vLLM server"), "version");
  if (!version) throw Error(version_url, "the answer has no \"version\"", "is this vLLM's URL?");

  const std::string metrics_url = http.url("/metrics");
  LiveRun run;
  Scrape before = http.scrape("/metrics", &run.metrics_before);
  if (!counts_drafts(before, labelled))
    throw Error(metrics_url,
                "speculative decoding is off: no vllm:spec_decode_num_drafts counter for "
                "model_name=\"" +
                    labelled + "\"" +
                    (labelled == model
                         ? ""
                         : " (the first served name, which labels \"" + model + "\"'s counters)"),
                "serve with --speculative-config '{\"method\": \"dflash\", …}'");

  const auto& prompts = in.prompts->prompts;
  const std::string completions = http.url("/v1/completions");
  const std::string tag = run_tag();
  std::vector<std::string> docs(prompts.size());
  std::vector<char> with_metrics(prompts.size(), 0);
  // Tokens each answer generated (usage.completion_tokens), else at most max_tokens.
  std::vector<std::int64_t> generated(prompts.size(), in.max_new_tokens);
  for_each_request(prompts.size(), in.concurrency, [&](std::size_t i) {
    const decode::Prompt& p = prompts[i];
    const std::string rid = "draftgate-" + tag + "-" + std::to_string(i + 1);
    const json body = {{"model", model},
                       {"prompt", p.input_ids},
                       {"max_tokens", in.max_new_tokens},
                       {"temperature", 0}};
    const json r = http.call("/v1/completions", body, {"X-Request-Id: " + rid});
    const std::string prompt = "the answer to prompt \"" + p.id + "\"";
    if (!r.is_object() || !r.contains("choices") || !r.at("choices").is_array() ||
        r.at("choices").empty())
      throw Error(completions, prompt + " is not a completion (no choices)");
    if (!r.contains("id"))
      throw Error(completions, prompt + " names no request (no id)",
                  "vLLM names its request in every answer: is something in front of it?");
    if (r.at("id") != "cmpl-" + rid)
      throw Error(completions,
                  prompt + " is for request " + describe_json(r.at("id")) + ", not cmpl-" + rid,
                  "a proxy or another client is mixing answers; measure on a server of its own");
    if (auto m = string_at(r, "model"); m && *m != model && *m != labelled)
      throw Error(completions, prompt + " comes from model \"" + *m + "\", not \"" + model + "\"");
    with_metrics[i] = has_request_metrics(r);
    if (const json* usage = r.contains("usage") ? &r.at("usage") : nullptr;
        usage != nullptr && usage->is_object() && usage->contains("completion_tokens") &&
        usage->at("completion_tokens").is_number_unsigned())
      generated[i] = static_cast<std::int64_t>(std::min<std::uint64_t>(
          usage->at("completion_tokens").get<std::uint64_t>(),
          static_cast<std::uint64_t>(in.max_new_tokens)));  // never more than asked for
    docs[i] = r.dump();
  });
  Scrape after = http.scrape("/metrics", &run.metrics_after);
  run.responses = joined_lines(docs);

  if (std::count(with_metrics.begin(), with_metrics.end(), 1) > 0) {
    VllmRequestsImport responses_in;
    responses_in.responses = completions;
    responses_in.engine_version = version;  // each answer's model was checked above
    responses_in.num_speculative_tokens = in.num_speculative_tokens;
    responses_in.prompts = prompts.size();
    responses_in.prompts_file = in.prompts->path;
    responses_in.text = run.responses;
    run.measured = import_vllm_requests(responses_in);
  } else {  // no per-request metrics: only the pooled τ of the /metrics difference
    run.measured = import_vllm_metrics(
        {std::move(after), std::move(before), labelled, in.num_speculative_tokens, version});
    run.measured.sources["tau_definition"] =
        "pooled only: the responses carry no per-request metrics (serve with "
        "--per-request-spec-decode-metrics summary for τ macro)";
    // Every draft step commits at least one token: more drafts than the run generated tokens
    // were another client's, or an engine's whose counters appeared mid-run.
    const std::int64_t tokens =
        std::accumulate(generated.begin(), generated.end(), std::int64_t{0});
    if (run.measured.drafts > tokens)
      throw Error(metrics_url,
                  "the counters moved by " + std::to_string(run.measured.drafts) +
                      " drafts between the scrapes, but the run generated at most " +
                      std::to_string(tokens) + " tokens (each draft step commits one at least)",
                  "another client used the server during the run: measure on a server of its own");
  }
  // The name its counters and answers carry, whichever alias was asked for: what `tau import`
  // of the saved answers and scrapes records too.
  run.measured.model_name = labelled;
  run.measured.inputs["server"] = http.base();
  run.measured.inputs["requests"] = completions;
  run.measured.inputs["models"] = models_url;
  run.measured.inputs["speculative_config"] = {
      {"num_speculative_tokens", run.measured.num_speculative_tokens},
      {"reported_by", run.measured.sources.value("num_speculative_tokens", "")}};
  run.measured.inputs["request"] = request_inputs(in);
  return run;
}

}  // namespace

LiveRun measure_live(const LiveMeasure& in) {
  for (const auto& p : in.prompts->prompts) {
    if (p.input_ids.empty())
      throw Error(in.prompts->path, "prompt \"" + p.id + "\" has no token ids",
                  "give input_ids, text or messages");
    // One request per prompt, as z-lab's server backends send only turns[0]: a later turn would
    // need the server's reply rendered into the conversation, which the engines' answers do not
    // give as draftgate renders them.
    if (p.turns() > 1)
      throw Error(in.prompts->path,
                  "prompt \"" + p.id + "\" has " + std::to_string(p.turns()) +
                      " user turns; tau measure sends one request per prompt",
                  "keep the first turn only (as the benchmark's server backends do), or decode "
                  "the turns with eval");
  }
  const EngineHttp http(in.url, in.timeout_seconds, in.api_key);
  if (in.engine == "sglang") return measure_sglang(in, http);
  return measure_vllm(in, http);
}

}  // namespace draftgate::tau
