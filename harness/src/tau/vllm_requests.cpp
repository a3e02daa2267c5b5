// vLLM per-request speculative-decoding metrics → measured τ with τ macro. A server started with
// --per-request-spec-decode-metrics summary|detailed (vllm-project/vllm#48915) puts into each
// OpenAI-compatible response (/v1/completions, /v1/chat/completions; the final usage chunk when
// streaming) an object
//   metrics.speculative_decoding = {mean_acceptance_length, draft_acceptance_rate,
//     acceptance_histogram, num_spec_steps, num_accepted_draft_tokens, num_draft_tokens,
//     num_spec_tokens[, per_step_accepted, per_step_drafted (detailed)]}
// and vLLM's tests state what the fields mean (vllm-project/vllm commit 2663fab4,
// tests/v1/spec_decode/test_request_acceptance.py, RequestSpecDecodeStats.to_dict):
// acceptance_histogram[j] = verify steps that accepted exactly j drafts (a dense list, or an object
// keyed "j" that leaves out empty buckets, there surfaced per choice as
// choices[].speculative_decoding_stats), num_draft_tokens = Σ drafts proposed (a step may propose
// fewer than num_spec_tokens), mean_acceptance_length = 1 + accepted / steps, draft_acceptance_rate
// = accepted / draft tokens, per_step_* one entry per step. Per request τ = mean_acceptance_length:
// τ macro is their mean, τ pooled = 1 + Σ accepted / Σ steps — exactly /metrics' τ.

#include "draftgate/tau/vllm_requests.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/tau/json_lines.h"

namespace draftgate::tau {
namespace {
using nlohmann::json;

struct Stats {
  std::int64_t steps = 0, accepted = 0, drafted = 0;
  std::optional<std::int64_t> k;        // num_spec_tokens
  std::vector<std::int64_t> histogram;  // dense; empty when not reported
};

class Reader {
 public:
  Reader(std::string file, std::string where) : file_(std::move(file)), where_(std::move(where)) {}

  [[noreturn]] void fail(const std::string& what, const std::string& hint = "") const {
    throw Error(file_, where_ + what, hint);
  }

  std::int64_t count(const json& v, const std::string& what) const {
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() > (std::uint64_t{1} << 40))
      fail(what + " is " + describe_json(v) + ", not a count");
    return static_cast<std::int64_t>(v.get<std::uint64_t>());
  }

  std::vector<std::int64_t> counts(const json& v, const std::string& what) const {
    if (!v.is_array() || v.size() > (std::size_t{1} << 24)) fail(what + " is not a list of counts");
    std::vector<std::int64_t> out;
    for (const json& c : v) out.push_back(count(c, "an entry of " + what));
    return out;
  }

  // A dense list, or an object {"j": steps} without the empty buckets.
  std::vector<std::int64_t> histogram(const json& v, const std::string& what) const {
    if (v.is_array()) {
      if (v.size() > 4097) fail(what + " has more than 4097 buckets");
      return counts(v, what);
    }
    if (!v.is_object()) fail(what + " is " + describe_json(v) + ", not a histogram");
    std::vector<std::int64_t> out;
    for (const auto& [key, c] : v.items()) {
      if (key.empty() || key.size() > 4 || key.find_first_not_of("0123456789") != std::string::npos)
        fail(what + " has the bucket \"" + key.substr(0, 40) + "\", not a number of drafts 0…4096");
      const std::size_t j = std::stoul(key);
      if (out.size() <= j) out.resize(j + 1, 0);
      out[j] = count(c, what + "[\"" + key + "\"]");
    }
    return out;
  }

  void agree(double reported, double computed, const std::string& what,
             const std::string& formula) const {
    if (std::abs(reported - computed) > 1e-9 * std::max(1.0, std::abs(computed)))
      fail(what + " " + format_number(reported, 10) + " is not " + formula + " = " +
           format_number(computed, 10));
  }

  Stats stats(const json& s, const std::string& name) const {
    if (!s.is_object()) fail(name + " is " + describe_json(s) + ", not an object");
    auto need = [&](const char* key) -> const json& {
      if (!s.contains(key)) fail(name + " has no " + key);
      return s.at(key);
    };
    Stats st;
    st.steps = count(need("num_spec_steps"), name + ".num_spec_steps");
    st.accepted = count(need("num_accepted_draft_tokens"), name + ".num_accepted_draft_tokens");
    st.drafted = count(need("num_draft_tokens"), name + ".num_draft_tokens");
    if (s.contains("num_spec_tokens"))
      st.k = count(s.at("num_spec_tokens"), name + ".num_spec_tokens");
    if (st.steps == 0)
      fail(name + ".num_spec_steps is 0: no speculative step, so the request has no τ",
           "give every prompt room for more than one token (max_tokens)");
    if (st.accepted > st.drafted)
      fail(name + " counts " + std::to_string(st.accepted) + " accepted of " +
           std::to_string(st.drafted) + " draft tokens");
    const double steps = static_cast<double>(st.steps), accepted = static_cast<double>(st.accepted);
    if (s.contains("mean_acceptance_length")) {
      const json& v = s.at("mean_acceptance_length");
      if (!v.is_number()) fail(name + ".mean_acceptance_length is " + describe_json(v));
      agree(v.get<double>(), 1 + accepted / steps, name + ".mean_acceptance_length",
            "1 + num_accepted_draft_tokens / num_spec_steps");
    }
    if (s.contains("draft_acceptance_rate") && st.drafted > 0) {
      const json& v = s.at("draft_acceptance_rate");
      if (!v.is_number()) fail(name + ".draft_acceptance_rate is " + describe_json(v));
      agree(v.get<double>(), accepted / static_cast<double>(st.drafted),
            name + ".draft_acceptance_rate", "num_accepted_draft_tokens / num_draft_tokens");
    }
    if (s.contains("acceptance_histogram")) {
      st.histogram = histogram(s.at("acceptance_histogram"), name + ".acceptance_histogram");
      std::int64_t n = 0, a = 0;
      for (std::size_t j = 0; j < st.histogram.size(); ++j) {
        n += st.histogram[j];
        a += static_cast<std::int64_t>(j) * st.histogram[j];
      }
      if (n != st.steps)
        fail(name + ".acceptance_histogram counts " + std::to_string(n) +
             " steps, num_spec_steps " + std::to_string(st.steps));
      if (a != st.accepted)
        fail(name + ".acceptance_histogram accounts for " + std::to_string(a) +
             " accepted drafts, num_accepted_draft_tokens " + std::to_string(st.accepted));
    }
    if (s.contains("per_step_accepted") || s.contains("per_step_drafted")) {
      const auto a = counts(need("per_step_accepted"), name + ".per_step_accepted");
      const auto d = counts(need("per_step_drafted"), name + ".per_step_drafted");
      if (static_cast<std::int64_t>(a.size()) != st.steps ||
          static_cast<std::int64_t>(d.size()) != st.steps)
        fail(name + ".per_step_accepted / per_step_drafted hold " + std::to_string(a.size()) +
             " / " + std::to_string(d.size()) + " steps, num_spec_steps " +
             std::to_string(st.steps));
      std::int64_t sa = 0, sd = 0;
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i] > d[i])
          fail(name + " step " + std::to_string(i) + " accepted " + std::to_string(a[i]) + " of " +
               std::to_string(d[i]) + " drafts");
        sa += a[i];
        sd += d[i];
      }
      if (sa != st.accepted || sd != st.drafted)
        fail(name + ".per_step_accepted / per_step_drafted sum to " + std::to_string(sa) + " / " +
             std::to_string(sd) + ", not num_accepted_draft_tokens / num_draft_tokens " +
             std::to_string(st.accepted) + " / " + std::to_string(st.drafted));
    }
    return st;
  }

 private:
  std::string file_, where_;
};

bool same(const Stats& a, const Stats& b) {
  return a.steps == b.steps && a.accepted == b.accepted && a.drafted == b.drafted;
}

struct Response {
  std::optional<std::string> id, model;
  Stats stats;
};

Response read_response(const json& r, const Reader& in) {
  if (!r.is_object()) in.fail("a response must be a JSON object");
  Response out;
  if (r.contains("id") && r.at("id").is_string()) out.id = r.at("id").get<std::string>();
  if (r.contains("model") && r.at("model").is_string())
    out.model = r.at("model").get<std::string>();
  std::optional<Stats> top, per_choice;
  if (r.contains("metrics") && r.at("metrics").is_object() &&
      r.at("metrics").contains("speculative_decoding"))
    top = in.stats(r.at("metrics").at("speculative_decoding"), "metrics.speculative_decoding");
  if (r.contains("choices") && r.at("choices").is_array()) {
    const json& choices = r.at("choices");
    std::size_t with = 0;
    for (std::size_t i = 0; i < choices.size(); ++i)
      if (choices[i].is_object() && choices[i].contains("speculative_decoding_stats")) {
        if (++with > 1)
          in.fail("more than one choice carries speculative_decoding_stats",
                  "send n = 1: τ is measured per request");
        per_choice = in.stats(choices[i].at("speculative_decoding_stats"),
                              "choices[" + std::to_string(i) + "].speculative_decoding_stats");
      }
  }
  if (top && per_choice && !same(*top, *per_choice))
    in.fail("metrics.speculative_decoding and the choice's speculative_decoding_stats disagree");
  if (!top && !per_choice)
    in.fail("the response has no metrics.speculative_decoding",
            "serve with --per-request-spec-decode-metrics summary (vLLM with PR 48915) and save "
            "the whole response, one a line");
  out.stats = top ? *top : *per_choice;
  return out;
}

}  // namespace

MeasuredTau import_vllm_requests(const VllmRequestsImport& in) {
  const std::string file = in.responses.string();
  std::vector<Response> responses;
  std::vector<std::string> wheres;
  const auto each = [&](const json& doc, const std::string& where) {
    responses.push_back(read_response(doc, Reader(file, where)));
    wheres.push_back(where);
  };
  const char* what = "JSON vLLM response";
  if (in.text)
    for_each_json_line(*in.text, file, "response", what, each);
  else
    for_each_json_line(in.responses, what, each);
  if (responses.empty()) throw Error(file, "no vLLM responses in the file");

  std::optional<std::int64_t> k = in.num_speculative_tokens;
  std::string k_source = in.num_speculative_tokens_from;
  std::optional<std::string> model = in.model_name;
  std::set<std::string> ids;
  for (std::size_t i = 0; i < responses.size(); ++i) {
    const Response& r = responses[i];
    const Reader at(file, wheres[i]);
    if (r.stats.k) {
      if (k && *k != *r.stats.k)
        at.fail("num_spec_tokens " + std::to_string(*r.stats.k) + ", not " + std::to_string(*k) +
                " (" + k_source + ")");
      k = r.stats.k;
      k_source = "num_spec_tokens of the responses";
    }
    if (r.model) {
      if (model && *model != *r.model)
        at.fail("a response of model \"" + *r.model + "\", not \"" + *model + "\"" +
                (in.model_name ? " (--model-name)" : " (the first response's)"));
      model = r.model;
    }
    if (r.id && !ids.insert(*r.id).second) at.fail("a second response with id \"" + *r.id + "\"");
  }
  if (!k)
    throw Error(file, "the responses do not say how many tokens were drafted per step",
                "pass --num-speculative-tokens K (the speculative config's value)");
  if (*k < 1 || *k > 4096)
    throw Error(file, "num_speculative_tokens " + std::to_string(*k) + " is outside 1…4096");
  if (in.prompts && *in.prompts != responses.size())
    throw Error(file,
                std::to_string(responses.size()) + " responses but " + in.prompts_file + " holds " +
                    std::to_string(*in.prompts) + " prompts",
                "save one response per prompt, in the prompt set's order");

  std::int64_t steps = 0, accepted = 0, drafted = 0;
  double macro = 0;
  bool histograms = true;
  std::vector<std::int64_t> at_least(static_cast<std::size_t>(*k), 0);
  for (std::size_t i = 0; i < responses.size(); ++i) {
    const Stats& s = responses[i].stats;
    const Reader at(file, wheres[i]);
    if (s.drafted > s.steps * *k)
      at.fail(std::to_string(s.drafted) + " draft tokens in " + std::to_string(s.steps) +
              " steps of at most " + std::to_string(*k));
    if (static_cast<std::int64_t>(s.histogram.size()) > *k + 1)
      at.fail("acceptance_histogram has " + std::to_string(s.histogram.size()) +
              " buckets, more than num_spec_tokens + 1 = " + std::to_string(*k + 1));
    steps += s.steps;
    accepted += s.accepted;
    drafted += s.drafted;
    macro += 1.0 + static_cast<double>(s.accepted) / static_cast<double>(s.steps);
    histograms = histograms && !s.histogram.empty();
    add_steps_accepting_at_least(s.histogram, at_least);
  }
  MeasuredTau m;
  m.engine = "vllm";
  m.engine_version = in.engine_version;
  m.tau_definition = "macro";
  m.tau_macro = macro / static_cast<double>(responses.size());
  m.tau_pooled = 1.0 + static_cast<double>(accepted) / static_cast<double>(steps);
  if (histograms) m.per_position_acceptance = acceptance_per_position(at_least, steps);
  m.drafts = steps;
  m.draft_tokens = drafted;
  m.accepted_tokens = accepted;
  m.requests = static_cast<std::int64_t>(responses.size());
  m.num_speculative_tokens = *k;
  m.model_name = model;
  const std::string field = "metrics.speculative_decoding";
  m.sources = {
      {"tau_macro", "mean over " + std::to_string(responses.size()) + " responses of 1 + " + field +
                        ".num_accepted_draft_tokens / num_spec_steps (vLLM's "
                        "mean_acceptance_length) in " +
                        file},
      {"tau_pooled", "1 + Σ num_accepted_draft_tokens / Σ num_spec_steps over the responses"},
      {"drafts", "Σ " + field + ".num_spec_steps"},
      {"draft_tokens", "Σ " + field + ".num_draft_tokens"},
      {"accepted_tokens", "Σ " + field + ".num_accepted_draft_tokens"},
      {"per_position_acceptance",
       histograms ? "Σ over responses of the steps in " + field +
                        ".acceptance_histogram that accepted ≥ d drafts / drafts"
                  : std::string("not reported (a response without acceptance_histogram)")},
      {"num_speculative_tokens", k_source}};
  m.inputs = {{"responses", file}};
  return m;
}

}  // namespace draftgate::tau
