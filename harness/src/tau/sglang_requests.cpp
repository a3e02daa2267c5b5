// SGLang /generate responses (one a line) → measured τ. Per request, SGLang's own
// spec_accept_length = completion_tokens / spec_verify_ct (python/sglang/srt/managers/
// tokenizer_manager.py, _calculate_spec_decoding_metrics): the tokens the request produced per
// verify step, bonus included (and the token sampled at prefill, which completion_tokens counts
// too).
//
// The drafts-only counts were renamed twice (verl-project/verl#7543 lists the versions):
//   ≤ 0.5.10   spec_accept_token_num / spec_draft_token_num (tokenizer_manager.py of that era:
//              accepted = Req.spec_accepted_tokens, drafts only; drafted = spec_verify_ct ×
//              (speculative_num_draft_tokens − 1)); no histogram
//   0.5.11     spec_accepted_drafts / spec_proposed_drafts, spec_accept_histogram
//              (sgl-project/sglang#23530)
//   ≥ 0.5.12   spec_num_correct_drafts / spec_num_proposed_drafts, spec_correct_drafts_histogram,
//              the 0.5.11 names kept as aliases "remove in next release" (sglang#24081; sglang
//              commit 001067ff, tokenizer_manager.py)
// The histogram counts verify steps by the number of drafts they accepted (index j: exactly j), so
// Σ h = spec_verify_ct and Σ j·h[j] = the correct drafts (the identities quoted in sglang#33518).

#include "draftgate/tau/sglang_requests.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/tau/json_lines.h"

namespace draftgate::tau {
namespace {
using nlohmann::json;

// Every name a count has had, newest first: all that a response carries must agree.
const std::vector<const char*> kCorrectNames = {"spec_num_correct_drafts", "spec_accepted_drafts",
                                                "spec_accept_token_num"};
const std::vector<const char*> kProposedNames = {"spec_num_proposed_drafts", "spec_proposed_drafts",
                                                 "spec_draft_token_num"};
const std::vector<const char*> kHistogramNames = {"spec_correct_drafts_histogram",
                                                  "spec_accept_histogram"};

struct Request {
  std::optional<std::string> id;
  std::int64_t completion_tokens = 0;
  std::int64_t verify_ct = 0;
  std::optional<std::int64_t> correct;   // drafts accepted (no bonus)
  std::optional<std::int64_t> proposed;  // drafts proposed
  std::vector<std::int64_t> histogram;   // verify steps by accepted drafts
};

// The names of each count the responses used, for the file's sources.
struct NamesRead {
  std::set<std::string> correct, proposed, histogram;
};

// A request id SGLang gave itself when the client sent none: uuid.uuid4().hex, 32 lowercase hex
// digits (GenerateReqInput.normalize in python/sglang/srt/managers/io_struct.py).
bool sglang_made_id(const std::string& id) {
  return id.size() == 32 && id.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::int64_t count_of(const json& v, const std::string& what, const std::string& where,
                      const std::string& file) {
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() > (std::uint64_t{1} << 40))
    throw Error(file, where + what + " is " + describe_json(v) + ", not a count");
  return static_cast<std::int64_t>(v.get<std::uint64_t>());
}

std::int64_t whole(const json& meta, const char* key, const std::string& where,
                   const std::string& file) {
  return count_of(meta.at(key), std::string("meta_info.") + key, where, file);
}

std::vector<std::int64_t> histogram_of(const json& meta, const char* key, const std::string& where,
                                       const std::string& file) {
  const json& h = meta.at(key);
  if (!h.is_array() || h.size() > 4097)
    throw Error(file, where + "meta_info." + key + " is not a list of counts");
  std::vector<std::int64_t> out;
  for (const json& c : h)
    out.push_back(count_of(c, std::string("an entry of ") + key, where, file));
  return out;
}

// The value of a renamed count: the newest name present, every other present name agreeing.
template <class T, class Read>
std::optional<T> renamed(const json& meta, const std::vector<const char*>& names, Read read,
                         std::set<std::string>& used, const std::string& where,
                         const std::string& file, const char** first_out = nullptr) {
  std::optional<T> value;
  const char* first = nullptr;
  for (const char* name : names) {
    if (!meta.contains(name)) continue;
    T v = read(meta, name, where, file);
    if (!value) {
      value = std::move(v);
      first = name;
      used.insert(name);
    } else if (v != *value) {
      throw Error(file, where + "meta_info." + name + " disagrees with meta_info." + first +
                            " (SGLang writes the same count under both names)");
    }
  }
  if (first_out) *first_out = first;
  return value;
}

Request read_request(const json& r, const std::string& where, const std::string& file,
                     NamesRead& names) {
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
  q.correct = renamed<std::int64_t>(meta, kCorrectNames, whole, names.correct, where, file);
  q.proposed = renamed<std::int64_t>(meta, kProposedNames, whole, names.proposed, where, file);
  const char* histogram_name = nullptr;
  q.histogram = renamed<std::vector<std::int64_t>>(meta, kHistogramNames, histogram_of,
                                                   names.histogram, where, file, &histogram_name)
                    .value_or(std::vector<std::int64_t>{});
  if (meta.contains("spec_accept_length")) {
    const json& v = meta.at("spec_accept_length");
    const double tau = static_cast<double>(q.completion_tokens) / static_cast<double>(q.verify_ct);
    if (!v.is_number() || std::abs(v.get<double>() - tau) > 1e-6 * tau)
      throw Error(file,
                  where + "meta_info.spec_accept_length " + describe_json(v) +
                      " is not completion_tokens / spec_verify_ct = " + format_number(tau, 8));
  }
  if (q.correct && q.proposed && *q.correct > *q.proposed)
    throw Error(file, where + std::to_string(*q.correct) + " correct drafts of only " +
                          std::to_string(*q.proposed) + " proposed");
  // spec_accept_rate = correct / proposed in every version (drafts only, no bonus).
  if (q.correct && q.proposed && *q.proposed > 0 && meta.contains("spec_accept_rate")) {
    const json& v = meta.at("spec_accept_rate");
    const double rate = static_cast<double>(*q.correct) / static_cast<double>(*q.proposed);
    if (!v.is_number() || std::abs(v.get<double>() - rate) > 1e-9)
      throw Error(file, where + "meta_info.spec_accept_rate " + describe_json(v) +
                            " is not correct / proposed drafts = " + format_number(rate, 8));
  }
  if (!q.histogram.empty()) {
    const std::string name = histogram_name;
    std::int64_t steps = 0, drafts = 0;
    for (std::size_t j = 0; j < q.histogram.size(); ++j) {
      steps += q.histogram[j];
      drafts += static_cast<std::int64_t>(j) * q.histogram[j];
    }
    if (steps != q.verify_ct)
      throw Error(file, where + "meta_info." + name + " counts " + std::to_string(steps) +
                            " steps, spec_verify_ct " + std::to_string(q.verify_ct));
    if (q.correct && drafts != *q.correct)
      throw Error(file, where + "meta_info." + name + " accounts for " + std::to_string(drafts) +
                            " correct drafts, the response's count is " +
                            std::to_string(*q.correct));
  }
  return q;
}

std::string joined(const std::set<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "meta_info." : " / meta_info.") + n;
  return s;
}

}  // namespace

MeasuredTau import_sglang_requests(const SglangImport& in) {
  const std::string file = in.requests.string();
  std::vector<Request> requests;
  NamesRead names;
  const auto each = [&](const json& doc, const std::string& where) {
    if (doc.is_array()) {  // a batched /generate request answers with a list
      for (const json& r : doc) requests.push_back(read_request(r, where, file, names));
    } else {
      requests.push_back(read_request(doc, where, file, names));
    }
  };
  const char* what = "JSON /generate response";
  if (in.text)
    for_each_json_line(*in.text, file, "response", what, each);
  else
    for_each_json_line(in.requests, what, each);
  if (requests.empty()) throw Error(file, "no /generate responses in the file");

  std::optional<std::int64_t> k = in.num_speculative_tokens;
  std::string k_source = in.num_speculative_tokens_from;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Request& q = requests[i];
    if (!q.proposed) continue;
    if (*q.proposed % q.verify_ct != 0)
      throw Error(file, "response " + std::to_string(i + 1) + ": " + joined(names.proposed) + " " +
                            std::to_string(*q.proposed) + " is not a multiple of spec_verify_ct " +
                            std::to_string(q.verify_ct));
    const std::int64_t ki = *q.proposed / q.verify_ct;
    if (k && *k != ki)
      throw Error(file, "response " + std::to_string(i + 1) + " drafted " + std::to_string(ki) +
                            " tokens per step, not " + std::to_string(*k) + " (" + k_source + ")");
    k = ki;
    k_source = joined(names.proposed) + " / meta_info.spec_verify_ct";
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
    // One response naming a prompt of the set says the client sent the prompt ids as rids (as
    // `tau measure` does): then every response is tied by its id. Else ids SGLang made itself
    // (uuid4().hex, or none) leave the order; ids a client chose that name no prompt of the set
    // are responses to another prompt set.
    bool by_id = false;
    for (const Request& q : requests) by_id = by_id || (q.id && id_set.count(*q.id));
    if (by_id) {
      for (std::size_t i = 0; i < requests.size(); ++i) {
        const Request& q = requests[i];
        if (!q.id || !id_set.count(*q.id))
          throw Error(
              file,
              "response " + std::to_string(i + 1) +
                  (q.id ? " names request \"" + q.id->substr(0, 64) + "\"" : " names no request") +
                  ", which is not a prompt of " + in.prompts_file +
                  ", while other responses name its prompts",
              "give the responses to this prompt set, one a prompt");
        if (!seen.insert(*q.id).second)
          throw Error(file, "two responses for prompt \"" + *q.id + "\"");
      }
      for (const auto& id : ids)
        if (!seen.count(id))
          throw Error(file, "no response for prompt \"" + id + "\" of " + in.prompts_file);
    } else if (const auto chosen =
                   std::find_if(requests.begin(), requests.end(),
                                [](const Request& q) { return q.id && !sglang_made_id(*q.id); });
               chosen != requests.end()) {
      throw Error(file,
                  "response " + std::to_string(chosen - requests.begin() + 1) +
                      " names request \"" + chosen->id->substr(0, 64) +
                      "\", and no response names a prompt of " + in.prompts_file +
                      ": responses to another prompt set",
                  "give the prompt set the responses answer (their meta_info.id are its prompt "
                  "ids)");
    } else if (requests.size() != ids.size()) {
      throw Error(file,
                  std::to_string(requests.size()) + " responses but " + in.prompts_file +
                      " holds " + std::to_string(ids.size()) + " prompts",
                  "save one response per prompt (tied by meta_info.id = the prompt id, or by "
                  "order)");
    }
  }

  std::int64_t completion = 0, steps = 0, correct = 0;
  double macro = 0;
  bool histograms = true, corrects = true;
  std::vector<std::int64_t> at_least(static_cast<std::size_t>(*k), 0);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Request& q = requests[i];
    completion += q.completion_tokens;
    steps += q.verify_ct;
    corrects = corrects && q.correct;
    correct += q.correct.value_or(0);
    macro += static_cast<double>(q.completion_tokens) / static_cast<double>(q.verify_ct);
    if (q.completion_tokens > q.verify_ct * (*k + 1) + 1)
      throw Error(file, "response " + std::to_string(i + 1) + ": " +
                            std::to_string(q.completion_tokens) + " tokens in " +
                            std::to_string(q.verify_ct) + " verify steps of at most " +
                            std::to_string(*k + 1));
    // Each verify step commits its accepted drafts and one token of the target's own: never none.
    if (q.completion_tokens < q.verify_ct)
      throw Error(file, "response " + std::to_string(i + 1) + ": " +
                            std::to_string(q.completion_tokens) + " tokens in " +
                            std::to_string(q.verify_ct) +
                            " verify steps, but every step commits at least one (τ ≥ 1)");
    histograms = histograms && !q.histogram.empty();
    if (static_cast<std::int64_t>(q.histogram.size()) > *k + 1)
      throw Error(file, "response " + std::to_string(i + 1) + ": " + joined(names.histogram) +
                            " is longer than " + std::to_string(*k + 1));
    add_steps_accepting_at_least(q.histogram, at_least);
  }
  MeasuredTau m;
  m.engine = "sglang";
  m.engine_version = in.engine_version;
  m.tau_definition = "macro";
  m.tau_macro = macro / static_cast<double>(requests.size());
  m.tau_pooled = static_cast<double>(completion) / static_cast<double>(steps);
  if (histograms) m.per_position_acceptance = acceptance_per_position(at_least, steps);
  m.drafts = steps;
  m.draft_tokens = steps * *k;
  m.accepted_tokens = corrects ? correct : completion - steps;
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
      {"accepted_tokens", corrects ? "Σ " + joined(names.correct)
                                   : std::string("Σ completion_tokens − Σ spec_verify_ct")},
      {"per_position_acceptance",
       histograms ? "Σ over responses of the verify steps in " + joined(names.histogram) +
                        " that accepted ≥ d drafts / drafts"
                  : std::string("not reported (a response without spec_correct_drafts_histogram "
                                "or spec_accept_histogram)")},
      {"num_speculative_tokens", k_source}};
  m.inputs = {{"requests", file}};
  return m;
}

}  // namespace draftgate::tau
