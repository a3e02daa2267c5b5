// SGLang /generate responses (one a line) → measured τ. Per request, SGLang's own
// spec_accept_length = completion_tokens / spec_verify_ct (python/sglang/srt/managers/
// tokenizer_manager.py): the tokens the request produced per verify step, bonus included (and the
// token sampled at prefill, which completion_tokens counts too).

#include <cmath>
#include <set>

#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/input_file.h"
#include "draftgate/io/json_util.h"
#include "draftgate/tau/engine_import.h"

namespace draftgate::tau {
namespace {
using nlohmann::json;

struct Request {
  std::optional<std::string> id;
  std::int64_t completion_tokens = 0;
  std::int64_t verify_ct = 0;
  std::optional<std::int64_t> proposed;  // spec_proposed_drafts
  std::vector<std::int64_t> histogram;   // spec_accept_histogram
};

std::int64_t whole(const json& meta, const char* key, const std::string& where,
                   const std::string& file) {
  const json& v = meta.at(key);
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() > (std::uint64_t{1} << 40))
    throw Error(file, where + "meta_info." + key + " is " + describe_json(v) + ", not a count");
  return static_cast<std::int64_t>(v.get<std::uint64_t>());
}

Request read_request(const json& r, const std::string& where, const std::string& file) {
  if (!r.is_object()) throw Error(file, where + "a response must be a JSON object");
  if (!r.contains("meta_info") || !r.at("meta_info").is_object())
    throw Error(file, where + "the response has no meta_info object",
                "save the whole /generate response, one a line");
  const json& meta = r.at("meta_info");
  for (const char* key : {"completion_tokens", "spec_verify_ct"})
    if (!meta.contains(key))
      throw Error(file, where + "meta_info has no " + key,
                  "serve with --speculative-algorithm DFLASH; SGLang reports spec_verify_ct "
                  "only for speculative requests");
  Request q;
  q.completion_tokens = whole(meta, "completion_tokens", where, file);
  q.verify_ct = whole(meta, "spec_verify_ct", where, file);
  if (q.verify_ct == 0 || q.completion_tokens == 0)
    throw Error(file, where + "spec_verify_ct or completion_tokens is 0: no speculative step");
  if (meta.contains("id") && meta.at("id").is_string()) q.id = meta.at("id").get<std::string>();
  for (const char* key : {"spec_proposed_drafts", "spec_num_proposed_drafts"})
    if (meta.contains(key)) q.proposed = whole(meta, key, where, file);
  if (meta.contains("spec_accept_length")) {
    const json& v = meta.at("spec_accept_length");
    const double tau = static_cast<double>(q.completion_tokens) / static_cast<double>(q.verify_ct);
    if (!v.is_number() || std::abs(v.get<double>() - tau) > 1e-6 * tau)
      throw Error(file,
                  where + "meta_info.spec_accept_length " + describe_json(v) +
                      " is not completion_tokens / spec_verify_ct = " + format_number(tau, 8));
  }
  if (meta.contains("spec_accept_histogram")) {
    const json& h = meta.at("spec_accept_histogram");
    if (!h.is_array() || h.size() > 4097)
      throw Error(file, where + "meta_info.spec_accept_histogram is not a list of counts");
    std::int64_t steps = 0;
    for (const json& c : h) {
      if (!c.is_number_unsigned() || c.get<std::uint64_t>() > (std::uint64_t{1} << 40))
        throw Error(file, where + "meta_info.spec_accept_histogram holds " + describe_json(c) +
                              ", not a count");
      q.histogram.push_back(static_cast<std::int64_t>(c.get<std::uint64_t>()));
      steps += q.histogram.back();
    }
    if (steps != q.verify_ct)
      throw Error(file, where + "meta_info.spec_accept_histogram counts " + std::to_string(steps) +
                            " steps, spec_verify_ct " + std::to_string(q.verify_ct));
  }
  return q;
}

}  // namespace

MeasuredTau import_sglang_requests(const SglangImport& in) {
  const std::string file = in.requests.string();
  const std::string text = io::read_input_file(in.requests, 1ull << 30, "JSON lines");
  std::vector<Request> requests;
  std::size_t number = 0, start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    const std::string_view line(text.data() + start, nl - start);
    start = nl + 1;
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = "line " + std::to_string(number) + ": ";
    json doc;
    try {
      doc = io::parse_json_strict(line, file);
    } catch (const Error& e) {
      throw Error(file, where + "not a JSON /generate response: " + e.problem(),
                  "one JSON response a line (JSONL)");
    }
    if (doc.is_array()) {  // a batched /generate request answers with a list
      for (const json& r : doc) requests.push_back(read_request(r, where, file));
    } else {
      requests.push_back(read_request(doc, where, file));
    }
  }
  if (requests.empty()) throw Error(file, "no /generate responses in the file");

  std::optional<std::int64_t> k = in.num_speculative_tokens;
  std::string k_source = "--num-speculative-tokens";
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Request& q = requests[i];
    if (!q.proposed) continue;
    if (*q.proposed % q.verify_ct != 0)
      throw Error(file, "response " + std::to_string(i + 1) + ": spec_proposed_drafts " +
                            std::to_string(*q.proposed) + " is not a multiple of spec_verify_ct " +
                            std::to_string(q.verify_ct));
    const std::int64_t ki = *q.proposed / q.verify_ct;
    if (k && *k != ki)
      throw Error(file, "response " + std::to_string(i + 1) + " drafted " + std::to_string(ki) +
                            " tokens per step, not " + std::to_string(*k) + " (" + k_source + ")");
    k = ki;
    k_source = "spec_proposed_drafts / spec_verify_ct";
  }
  if (!k)
    throw Error(file, "the responses do not say how many tokens were drafted per step",
                "pass --num-speculative-tokens K (speculative-num-draft-tokens − 1)");
  if (*k < 1 || *k > 4096)
    throw Error(file, "num_speculative_tokens " + std::to_string(*k) + " is outside 1…4096");

  if (in.prompt_ids) {
    const auto& ids = *in.prompt_ids;
    const std::set<std::string> id_set(ids.begin(), ids.end());
    std::set<std::string> seen;
    bool by_id = true;
    for (const Request& q : requests) by_id = by_id && q.id && id_set.count(*q.id);
    if (by_id) {
      for (const Request& q : requests)
        if (!seen.insert(*q.id).second)
          throw Error(file, "two responses for prompt \"" + *q.id + "\"");
      for (const auto& id : ids)
        if (!seen.count(id))
          throw Error(file, "no response for prompt \"" + id + "\" of " + in.prompts_file);
    } else if (requests.size() != ids.size()) {
      throw Error(file,
                  std::to_string(requests.size()) + " responses but " + in.prompts_file +
                      " holds " + std::to_string(ids.size()) + " prompts",
                  "save one response per prompt (tied by meta_info.id = the prompt id, or by "
                  "order)");
    }
  }

  std::int64_t completion = 0, steps = 0;
  double macro = 0;
  bool histograms = true;
  std::vector<std::int64_t> at_least(static_cast<std::size_t>(*k), 0);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Request& q = requests[i];
    completion += q.completion_tokens;
    steps += q.verify_ct;
    macro += static_cast<double>(q.completion_tokens) / static_cast<double>(q.verify_ct);
    if (q.completion_tokens > q.verify_ct * (*k + 1) + 1)
      throw Error(file, "response " + std::to_string(i + 1) + ": " +
                            std::to_string(q.completion_tokens) + " tokens in " +
                            std::to_string(q.verify_ct) + " verify steps of at most " +
                            std::to_string(*k + 1));
    histograms = histograms && !q.histogram.empty();
    if (static_cast<std::int64_t>(q.histogram.size()) > *k + 1)
      throw Error(file, "response " + std::to_string(i + 1) +
                            ": spec_accept_histogram is longer than " + std::to_string(*k + 1));
    std::int64_t accepted_here = 0;  // steps of this request that accepted ≥ a drafts
    for (std::size_t a = q.histogram.size(); a-- > 1;) {
      accepted_here += q.histogram[a];
      at_least[a - 1] += accepted_here;
    }
  }
  MeasuredTau m;
  m.engine = "sglang";
  m.engine_version = in.engine_version;
  m.tau_definition = "macro";
  m.tau_macro = macro / static_cast<double>(requests.size());
  m.tau_pooled = static_cast<double>(completion) / static_cast<double>(steps);
  if (histograms)
    for (std::int64_t d : at_least)
      m.per_position_acceptance.push_back(static_cast<double>(d) / static_cast<double>(steps));
  m.drafts = steps;
  m.draft_tokens = steps * *k;
  m.accepted_tokens = completion - steps;
  m.requests = static_cast<std::int64_t>(requests.size());
  m.num_speculative_tokens = *k;
  m.sources = {
      {"tau_macro", "mean over " + std::to_string(requests.size()) +
                        " responses of meta_info.completion_tokens / meta_info.spec_verify_ct "
                        "(SGLang's spec_accept_length) in " +
                        file},
      {"tau_pooled", "Σ completion_tokens / Σ spec_verify_ct over the responses"},
      {"drafts", "Σ meta_info.spec_verify_ct"},
      {"draft_tokens", "drafts × num_speculative_tokens"},
      {"accepted_tokens", "Σ completion_tokens − Σ spec_verify_ct"},
      {"per_position_acceptance",
       histograms ? "Σ over responses of the verify steps in meta_info.spec_accept_histogram "
                    "that accepted ≥ d drafts / drafts"
                  : "not reported (a response without spec_accept_histogram)"},
      {"num_speculative_tokens", k_source}};
  m.inputs = {{"requests", file}};
  return m;
}

}  // namespace draftgate::tau
