// vLLM's speculative-decoding counters (vllm/v1/spec_decode/metrics.py) → measured τ.

#include "draftgate/tau/vllm_metrics.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/input_file.h"

namespace draftgate::tau {
namespace {

constexpr const char* kDrafts = "vllm:spec_decode_num_drafts";
constexpr const char* kDraftTokens = "vllm:spec_decode_num_draft_tokens";
constexpr const char* kAccepted = "vllm:spec_decode_num_accepted_tokens";
constexpr const char* kPerPos = "vllm:spec_decode_num_accepted_tokens_per_pos";

std::string label_text(const std::map<std::string, std::string>& labels) {
  std::string s = "{";
  for (const auto& [k, v] : labels) s += (s.size() > 1 ? "," : "") + k + "=\"" + v + "\"";
  return s + "}";
}

// The series of `family` in a scrape: label set (model_name kept) → value. prometheus_client
// writes a counter's samples as NAME_total (NAME_created is its creation time, see refuse_restart);
// an exporter without the suffix writes NAME.
std::map<std::string, double> series(
    const Scrape& s, const std::string& family, const std::optional<std::string>& model,
    std::map<std::string, std::map<std::string, std::string>>* labels_of = nullptr) {
  bool suffixed = false;
  for (const auto& x : s.text.samples) suffixed |= x.name == family + "_total";
  const std::string name = suffixed ? family + "_total" : family;
  // prometheus_client declares "# TYPE NAME_total counter"; other exporters the bare family.
  for (const std::string& declared : {family, name})
    if (auto t = s.text.types.find(declared); t != s.text.types.end() && t->second != "counter")
      throw Error(s.source, declared + " is declared as a " + t->second + ", not a counter");
  std::map<std::string, double> out, bare;
  for (const auto& x : s.text.samples) {
    if (suffixed && x.name == family) bare.emplace(label_text(x.labels), x.value);
    if (x.name != name) continue;
    auto m = x.labels.find("model_name");
    if (model && (m == x.labels.end() || m->second != *model)) continue;
    const std::string key = label_text(x.labels);
    const std::string where = "line " + std::to_string(x.line) + ": " + name + key;
    if (!std::isfinite(x.value))
      throw Error(s.source, where + " is " + format_number(x.value) + ", not a count");
    if (x.value < 0 || x.value != std::floor(x.value) || x.value > 9007199254740992.0)
      throw Error(s.source, where + " is " + format_number(x.value, 17) +
                                ", not a count (a whole number ≥ 0 below 2^53)");
    if (!out.emplace(key, x.value).second) throw Error(s.source, where + " appears twice");
    if (labels_of) (*labels_of)[key] = x.labels;
  }
  // One series under both names: two values of one count, so neither can be trusted.
  for (const auto& [key, value] : bare)
    if (auto it = out.find(key); it != out.end() && it->second != value)
      throw Error(s.source,
                  name + key + " is " + format_number(it->second, 17) + " but " + family + key +
                      " is " + format_number(value, 17) +
                      " on the same page: two values of one counter",
                  "is something in front of the server rewriting its /metrics?");
  return out;
}

struct Delta {
  double total = 0;
  std::map<std::string, double> per_series;
};

// after − before per label set; a series that fell or vanished is a counter reset.
Delta difference(const Scrape& after, const Scrape* before, const std::string& family,
                 const std::optional<std::string>& model,
                 std::map<std::string, std::map<std::string, std::string>>* labels_of = nullptr) {
  const auto a = series(after, family, model, labels_of);
  Delta d;
  std::map<std::string, double> b;
  if (before) b = series(*before, family, model);
  // vLLM creates its counters, at 0, when it starts: a scrape with none of this model's is not
  // one of this server before the run (taken as zeros, it would count since the server started).
  if (before && b.empty() && !a.empty())
    throw Error(before->source,
                "has no " + family + "_total series" +
                    (model ? " for model_name=\"" + *model + "\"" : "") + ", which " +
                    after.source +
                    " has: not a scrape of the same server before the run (vLLM creates the "
                    "counters, at 0, when it starts)",
                "give as --before the /metrics of the same server, scraped just before the run");
  for (const auto& [key, was] : b)
    if (!a.count(key))
      throw Error(after.source,
                  family + key + " is in " + before->source +
                      " but not here: the server restarted "
                      "between the scrapes (counter reset)",
                  "scrape before and after one uninterrupted run");
  for (const auto& [key, now] : a) {
    // A series of its own that the earlier scrape lacked, beside ones it had: counted from 0, it
    // would add counts from before the run (an engine or label set that appeared mid-run).
    if (!b.empty() && !b.count(key))
      throw Error(after.source,
                  family + key + " is not in " + before->source + ", which has " + family +
                      b.begin()->first + ": a series that appeared between the scrapes",
                  "scrape before and after one uninterrupted run on a server of its own");
    const double was = b.count(key) ? b.at(key) : 0.0;
    if (now < was)
      throw Error(after.source,
                  family + key + " fell from " + format_number(was, 17) + " (" + before->source +
                      ") to " + format_number(now, 17) + ": counter reset",
                  "scrape before and after one uninterrupted run");
    d.per_series[key] = now - was;
    d.total += now - was;
  }
  return d;
}

// The samples called `name` (of `model`, where they carry model_name): label set → value.
std::map<std::string, double> samples_named(const Scrape& s, const std::string& name,
                                            const std::optional<std::string>& model) {
  std::map<std::string, double> out;
  for (const auto& x : s.text.samples) {
    if (x.name != name) continue;
    auto m = x.labels.find("model_name");
    if (model && m != x.labels.end() && m->second != *model) continue;
    out.emplace(label_text(x.labels), x.value);
  }
  return out;
}

// A restart between the scrapes recreates every counter, so after − before would mix two
// processes' counts: a wrong τ even when no counter happens to fall below its earlier value.
// prometheus_client exports the process's start time (process_start_time_seconds, its process
// collector) and for each counter NAME_created, the time the series was created; either changing
// between the scrapes is a restart.
void refuse_restart(const Scrape& after, const Scrape& before,
                    const std::optional<std::string>& model) {
  std::vector<std::string> names = {"process_start_time_seconds"};
  for (const char* family : {kDrafts, kDraftTokens, kAccepted, kPerPos})
    names.push_back(std::string(family) + "_created");
  for (const std::string& name : names) {
    const auto was = samples_named(before, name, model);
    for (const auto& [key, now] : samples_named(after, name, model)) {
      const auto w = was.find(key);
      if (w == was.end() || w->second == now) continue;
      throw Error(after.source,
                  "the server restarted between the scrapes: " + name + (key == "{}" ? "" : key) +
                      " is " + format_number(now, 17) + " here but " +
                      format_number(w->second, 17) + " in " + before.source +
                      ", so the counters were reset",
                  "scrape before and after one uninterrupted run");
    }
  }
}

std::set<std::string> models_in(const Scrape& s) {
  std::set<std::string> models;
  for (const auto& x : s.text.samples)
    if (x.name.rfind("vllm:spec_decode_", 0) == 0)
      if (auto m = x.labels.find("model_name"); m != x.labels.end()) models.insert(m->second);
  return models;
}

std::string join(const std::set<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

Scrape read_scrape_file(const std::filesystem::path& path) {
  const std::string file = path.string();
  return {file, parse_prometheus_text(io::read_input_file(path, kMaxScrapeBytes, "Prometheus text"),
                                      file)};
}

MeasuredTau import_vllm_metrics(const VllmImport& in) {
  const Scrape& after = in.after;
  const Scrape* b = in.before ? &*in.before : nullptr;

  const std::set<std::string> models = models_in(after);
  std::optional<std::string> model = in.model_name;
  if (model && !models.count(*model))
    throw Error(after.source, "no vllm:spec_decode_* series with model_name=\"" + *model + "\"" +
                                  (models.empty() ? "" : " (found: " + join(models) + ")"));
  if (!model && models.size() > 1)
    throw Error(after.source, "counters of several models (" + join(models) + ")",
                "choose one with --model-name");
  if (!model && models.size() == 1) model = *models.begin();

  if (b) refuse_restart(after, *b, model);
  const Delta drafts = difference(after, b, kDrafts, model);
  const Delta draft_tokens = difference(after, b, kDraftTokens, model);
  const Delta accepted = difference(after, b, kAccepted, model);
  for (const auto& [family, delta] :
       {std::pair{kDrafts, &drafts}, {kDraftTokens, &draft_tokens}, {kAccepted, &accepted}})
    if (delta->per_series.empty())
      throw Error(after.source,
                  std::string("no ") + family + "_total series" +
                      (model ? " for model_name=\"" + *model + "\"" : ""),
                  "scrape /metrics of a vLLM server running with --speculative-config");
  if (drafts.total <= 0)
    throw Error(after.source,
                std::string("no drafts were counted") +
                    (b ? " between " + b->source + " and this scrape" : ""),
                "run the benchmark between the two scrapes, with speculative decoding on");

  // Per-position counters, summed over engines, by position.
  std::map<std::string, std::map<std::string, std::string>> labels_of;
  const Delta per_series = difference(after, b, kPerPos, model, &labels_of);
  std::map<std::int64_t, double> per_pos;
  for (const auto& [key, value] : per_series.per_series) {
    const auto& labels = labels_of.at(key);
    const auto p = labels.find("position");
    if (p == labels.end() || p->second.empty() || p->second.size() > 4 ||
        p->second.find_first_not_of("0123456789") != std::string::npos)
      throw Error(after.source,
                  std::string(kPerPos) + "_total" + key + " has no position label 0…4095");
    per_pos[std::stoll(p->second)] += value;
  }
  std::int64_t k = 0;
  if (!per_pos.empty()) {
    k = per_pos.rbegin()->first + 1;
    for (std::int64_t i = 0; i < k; ++i)
      if (!per_pos.count(i))
        throw Error(after.source, std::string(kPerPos) + "_total has no series for position " +
                                      std::to_string(i) + " (positions up to " +
                                      std::to_string(k - 1) + " are present)");
    if (in.num_speculative_tokens && *in.num_speculative_tokens != k)
      throw Error("--num-speculative-tokens", std::to_string(*in.num_speculative_tokens) + " but " +
                                                  after.source + " counts acceptance at " +
                                                  std::to_string(k) + " positions");
  } else if (in.num_speculative_tokens) {
    k = *in.num_speculative_tokens;
  } else {
    throw Error(after.source,
                std::string("no ") + kPerPos +
                    "_total series, so the number of "
                    "speculative tokens is unknown",
                "pass --num-speculative-tokens K (the speculative config's value)");
  }
  if (k < 1 || k > 4096)
    throw Error("--num-speculative-tokens", std::to_string(k) + " is outside 1…4096");

  const double n = drafts.total;
  std::string bad;
  if (accepted.total > draft_tokens.total)
    bad = "more accepted tokens than draft tokens";
  else if (draft_tokens.total > n * static_cast<double>(k))
    bad = "more draft tokens than drafts × " + std::to_string(k) + " speculative tokens";
  double per_pos_sum = 0;
  for (const auto& [pos, v] : per_pos) {
    per_pos_sum += v;
    if (v > n) bad = "position " + std::to_string(pos) + " accepted more often than drafts";
    if (pos > 0 && v > per_pos.at(pos - 1))
      bad = "position " + std::to_string(pos) + " accepted more often than position " +
            std::to_string(pos - 1);
  }
  if (!per_pos.empty() && per_pos_sum != accepted.total)
    bad = "the per-position counts sum to " + format_number(per_pos_sum, 17) + ", not to the " +
          format_number(accepted.total, 17) + " accepted tokens";
  if (!bad.empty())
    throw Error(after.source, "inconsistent counters: " + bad,
                "scrape while the server is idle, after the run has finished");

  MeasuredTau m;
  m.engine = "vllm";
  m.engine_version = in.engine_version;
  m.tau_definition = "pooled";
  m.tau_pooled = 1.0 + accepted.total / n;
  for (const auto& [pos, v] : per_pos) m.per_position_acceptance.push_back(v / n);
  m.drafts = static_cast<std::int64_t>(n);
  m.draft_tokens = static_cast<std::int64_t>(draft_tokens.total);
  m.accepted_tokens = static_cast<std::int64_t>(accepted.total);
  m.num_speculative_tokens = k;
  m.model_name = model;
  const std::string run = b ? " (" + after.source + " − " + b->source + ")"
                            : " (" + after.source + ", since server start)";
  const std::string sel = model ? "{model_name=\"" + *model + "\"}" : "";
  const std::string engines =
      ", summed over " + std::to_string(drafts.per_series.size()) + " label set(s)";
  m.sources = {{"tau_pooled",
                "1 + accepted_tokens / drafts: vLLM's mean acceptance length "
                "(vllm/v1/spec_decode/metrics.py)"},
               {"drafts", std::string(kDrafts) + "_total" + sel + run + engines},
               {"draft_tokens", std::string(kDraftTokens) + "_total" + sel + run + engines},
               {"accepted_tokens", std::string(kAccepted) + "_total" + sel + run + engines},
               {"per_position_acceptance",
                per_pos.empty()
                    ? "not reported (no per-position series)"
                    : std::string(kPerPos) + "_total" + sel + "{position=d−1}" + run + " / drafts"},
               {"num_speculative_tokens",
                per_pos.empty() ? "--num-speculative-tokens" : "the number of position series"}};
  m.inputs = {{"after", after.source}, {"before", b ? nlohmann::json(b->source) : nullptr}};
  return m;
}

std::string vllm_metrics_text(const std::string& model_name, std::int64_t drafts,
                              std::int64_t draft_tokens, std::int64_t accepted,
                              const std::vector<std::int64_t>& accepted_per_pos) {
  std::string label = model_name;  // escaped as the text format requires
  for (std::size_t i = 0; i < label.size(); ++i)
    if (label[i] == '\\' || label[i] == '"') label.insert(i++, 1, '\\');
  const std::string labels = "{model_name=\"" + label + "\",engine=\"0\"";
  std::string out;
  auto family = [&](const char* name, const char* help) {
    out +=
        std::string("# HELP ") + name + "_total " + help + "\n# TYPE " + name + "_total counter\n";
  };
  family(kDrafts, "Number of spec decoding drafts.");
  out += std::string(kDrafts) + "_total" + labels + "} " + std::to_string(drafts) + ".0\n";
  family(kDraftTokens, "Number of draft tokens.");
  out +=
      std::string(kDraftTokens) + "_total" + labels + "} " + std::to_string(draft_tokens) + ".0\n";
  family(kAccepted, "Number of accepted tokens.");
  out += std::string(kAccepted) + "_total" + labels + "} " + std::to_string(accepted) + ".0\n";
  family(kPerPos, "Accepted tokens per draft position.");
  for (std::size_t i = 0; i < accepted_per_pos.size(); ++i)
    out += std::string(kPerPos) + "_total" + labels + ",position=\"" + std::to_string(i) + "\"} " +
           std::to_string(accepted_per_pos[i]) + ".0\n";
  return out;
}

}  // namespace draftgate::tau
