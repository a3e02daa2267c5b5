#include "draftgate/tau/measured_tau.h"

#include <cmath>
#include <ctime>

#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/json_util.h"
#include "draftgate/tau/prompt_set.h"

namespace draftgate::tau {
namespace {
using nlohmann::json;

const json& need(const json& doc, const char* key, const std::string& file) {
  if (!doc.contains(key)) throw Error(file, std::string("measured τ file has no \"") + key + "\"");
  return doc.at(key);
}

std::string text(const json& doc, const char* key, const std::string& file) {
  const json& v = need(doc, key, file);
  if (!v.is_string())
    throw Error(file, std::string("measured τ field \"") + key + "\" must be a string");
  return v.get<std::string>();
}

std::optional<std::string> optional_text(const json& doc, const char* key,
                                         const std::string& file) {
  if (!doc.contains(key) || doc.at(key).is_null()) return std::nullopt;
  return text(doc, key, file);
}

double number(const json& doc, const char* key, const std::string& file) {
  const json& v = need(doc, key, file);
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    throw Error(file, std::string("measured τ field \"") + key + "\" must be a finite number");
  return v.get<double>();
}

std::int64_t count(const json& doc, const char* key, const std::string& file) {
  const json& v = need(doc, key, file);
  if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<std::int64_t>() < 0))
    throw Error(file,
                std::string("measured τ field \"") + key + "\" must be a non-negative integer");
  const auto u = v.get<std::uint64_t>();
  if (u > (std::uint64_t{1} << 53))
    throw Error(file, std::string("measured τ field \"") + key + "\" is implausibly large");
  return static_cast<std::int64_t>(u);
}

std::optional<std::int64_t> optional_count(const json& doc, const char* key,
                                           const std::string& file) {
  if (!doc.contains(key) || doc.at(key).is_null()) return std::nullopt;
  return count(doc, key, file);
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

template <class T>
json or_null(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace

std::string describe_json(const json& value) {
  if (value.is_structured()) return std::string("a JSON ") + value.type_name();
  return value.dump().substr(0, 40);
}

double MeasuredTau::tau() const { return tau_definition == "macro" ? *tau_macro : tau_pooled; }

std::optional<double> MeasuredTau::tau_of(const std::string& definition) const {
  return definition == "macro" ? tau_macro : std::optional<double>(tau_pooled);
}

std::string MeasuredTau::formula(const std::string& definition) const {
  const auto f = formulas.find(definition);
  return f != formulas.end() ? f->second : tau_formula(engine, definition);
}

std::string tau_formula(const std::string& engine, const std::string& definition) {
  if (definition == "per_position_acceptance")
    return "verify steps that accepted the depth-d draft / verify steps";
  const std::string one = engine == "sglang" ? "completion_tokens / verify steps"
                                             : "1 + accepted drafts / verify steps";
  if (definition == "macro") return "mean over requests of " + one;
  return engine == "sglang" ? "Σ completion_tokens / Σ verify steps"
                            : "1 + Σ accepted drafts / Σ verify steps";
}

json to_json(const MeasuredTau& m) {
  json prompt_set = nullptr;
  if (m.prompt_set_sha256)
    prompt_set = {{"path", or_null(m.prompt_set_path)},
                  {"sha256", *m.prompt_set_sha256},
                  {"prompts", or_null(m.prompt_set_prompts)},
                  {"rendering", decode::rendering_json(m.prompt_set_rendering)}};
  if (m.prompt_set_sha256 && !m.prompt_set_sha256_of_file)
    prompt_set["sha256_of"] = decode::kPromptsIdentity;
  json formulas = json::object();
  for (const char* d : {"pooled", "macro", "per_position_acceptance"})
    if (std::string(d) != "macro" || m.tau_macro) formulas[d] = m.formula(d);
  return {{"schema", kMeasuredTauSchema},
          {"engine", {{"name", m.engine}, {"version", or_null(m.engine_version)}}},
          {"tau_definition", m.tau_definition},
          {"tau_formulas", formulas},
          {"tau_pooled", m.tau_pooled},
          {"tau_macro", or_null(m.tau_macro)},
          {"per_position_acceptance", m.per_position_acceptance},
          {"drafts", m.drafts},
          {"draft_tokens", m.draft_tokens},
          {"accepted_tokens", m.accepted_tokens},
          {"requests", or_null(m.requests)},
          {"num_speculative_tokens", m.num_speculative_tokens},
          {"block_size", m.block_size()},
          {"model_name", or_null(m.model_name)},
          {"prompt_set", prompt_set},
          {"sources", m.sources},
          {"inputs", m.inputs},
          {"draftgate_version", DRAFTGATE_VERSION},
          {"created_at", utc_now()}};
}

MeasuredTau measured_tau_from_json(const json& doc, const std::string& file) {
  if (!doc.is_object()) throw Error(file, "a measured τ file must be a JSON object");
  const std::string schema = text(doc, "schema", file);
  if (schema != kMeasuredTauSchema)
    throw Error(file, "schema \"" + schema + "\" is not " + kMeasuredTauSchema,
                "write it with draftgate tau import");
  MeasuredTau m;
  m.path = file;
  const json& engine = need(doc, "engine", file);
  if (!engine.is_object()) throw Error(file, "measured τ field \"engine\" must be an object");
  m.engine = text(engine, "name", file);
  if (m.engine != "vllm" && m.engine != "sglang")
    throw Error(file, "engine \"" + m.engine + "\" is not vllm or sglang");
  m.engine_version = optional_text(engine, "version", file);
  m.tau_definition = text(doc, "tau_definition", file);
  if (m.tau_definition != "pooled" && m.tau_definition != "macro")
    throw Error(file, "tau_definition \"" + m.tau_definition + "\" is not pooled or macro");
  m.num_speculative_tokens = count(doc, "num_speculative_tokens", file);
  if (m.num_speculative_tokens < 1 || m.num_speculative_tokens > 4096)
    throw Error(file, "num_speculative_tokens " + std::to_string(m.num_speculative_tokens) +
                          " is outside 1…4096");
  if (count(doc, "block_size", file) != m.block_size())
    throw Error(file, "block_size is not num_speculative_tokens + 1");
  // A verify step commits at most the block (k drafts and the target's token); SGLang's
  // completion_tokens also counts the token sampled at prefill, so its τ may exceed the block size
  // by up to one token per request.
  const bool sglang = m.engine == "sglang";
  const std::int64_t ceiling = m.block_size() + (sglang ? 1 : 0);
  auto check_tau = [&](double t, const char* key) {
    if (!(t >= 1.0) || !(t <= static_cast<double>(ceiling)))
      throw Error(file, std::string(key) + " " + format_number(t, 6) + " is outside 1…" +
                            std::to_string(ceiling) +
                            (sglang ? " (the block size + 1: SGLang counts the prefill token)"
                                    : " (the block size)"));
  };
  m.tau_pooled = number(doc, "tau_pooled", file);
  check_tau(m.tau_pooled, "tau_pooled");
  if (!need(doc, "tau_macro", file).is_null()) {
    m.tau_macro = number(doc, "tau_macro", file);
    check_tau(*m.tau_macro, "tau_macro");
  }
  if (m.tau_definition == "macro" && !m.tau_macro)
    throw Error(file, "tau_definition is macro but tau_macro is null");
  if (doc.contains("tau_formulas")) {  // absent from older files: the engine's formulas
    const json& f = doc.at("tau_formulas");
    if (!f.is_object()) throw Error(file, "tau_formulas must be an object");
    for (const char* d : {"pooled", "macro", "per_position_acceptance"})
      if (f.contains(d)) m.formulas[d] = text(f, d, file);
  }
  const json& per_pos = need(doc, "per_position_acceptance", file);
  if (!per_pos.is_array()) throw Error(file, "per_position_acceptance must be an array");
  for (const json& v : per_pos) {
    if (!v.is_number() || !(v.get<double>() >= 0.0) || !(v.get<double>() <= 1.0))
      throw Error(file,
                  "per_position_acceptance holds " + describe_json(v) + ", not a share in 0…1");
    m.per_position_acceptance.push_back(v.get<double>());
  }
  if (!m.per_position_acceptance.empty() &&
      static_cast<std::int64_t>(m.per_position_acceptance.size()) != m.num_speculative_tokens)
    throw Error(file, "per_position_acceptance has " +
                          std::to_string(m.per_position_acceptance.size()) +
                          " depths but num_speculative_tokens is " +
                          std::to_string(m.num_speculative_tokens));
  m.drafts = count(doc, "drafts", file);
  m.draft_tokens = count(doc, "draft_tokens", file);
  m.accepted_tokens = count(doc, "accepted_tokens", file);
  m.requests = optional_count(doc, "requests", file);
  // vLLM's τ pooled is its counts' 1 + accepted / drafts (tau_formulas): an edited τ is not.
  if (!sglang) {
    if (m.drafts < 1)
      throw Error(file, "drafts is 0: a vLLM τ counts at least one draft step",
                  "was the file edited? write it again with draftgate tau import");
    const double from_counts =
        1.0 + static_cast<double>(m.accepted_tokens) / static_cast<double>(m.drafts);
    if (std::abs(m.tau_pooled - from_counts) > 1e-9 * from_counts)
      throw Error(file,
                  "tau_pooled " + format_number(m.tau_pooled, 12) + " is not 1 + accepted_tokens " +
                      std::to_string(m.accepted_tokens) + " / drafts " + std::to_string(m.drafts) +
                      " = " + format_number(from_counts, 12),
                  "was the file edited? write it again with draftgate tau import");
  }
  m.model_name = optional_text(doc, "model_name", file);
  const json& prompt_set = need(doc, "prompt_set", file);
  if (!prompt_set.is_null()) {
    if (!prompt_set.is_object()) throw Error(file, "prompt_set must be an object or null");
    m.prompt_set_path = optional_text(prompt_set, "path", file);
    m.prompt_set_sha256 = text(prompt_set, "sha256", file);
    if (m.prompt_set_sha256->size() != 64 ||
        m.prompt_set_sha256->find_first_not_of("0123456789abcdef") != std::string::npos)
      throw Error(file, "prompt_set.sha256 is not a SHA-256 hex digest");
    m.prompt_set_sha256_of_file = !prompt_set.contains("sha256_of");
    if (!m.prompt_set_sha256_of_file && prompt_set["sha256_of"] != decode::kPromptsIdentity)
      throw Error(file,
                  std::string("prompt_set.sha256_of must be \"") + decode::kPromptsIdentity + "\"");
    m.prompt_set_prompts = optional_count(prompt_set, "prompts", file);
    m.prompt_set_rendering = decode::rendering_from_json(prompt_set.value("rendering", json()),
                                                         file, "prompt_set.rendering");
  }
  m.sources = need(doc, "sources", file);
  m.inputs = need(doc, "inputs", file);
  if (!m.sources.is_object() || !m.inputs.is_object())
    throw Error(file, "sources and inputs must be objects");
  return m;
}

MeasuredTau read_measured_tau(const std::filesystem::path& path) {
  return measured_tau_from_json(io::read_json_file(path, 64ull << 20), path.string());
}

std::optional<std::string> unlike(const MeasuredTau& measured, const MeasuredTau& golden) {
  const std::string g = " but the golden (" + golden.path + ") ";
  if (measured.engine != golden.engine)
    return "measured by " + measured.engine + g + "by " + golden.engine +
           " (the engines count τ differently)";
  // The name the engine's own outputs carry (vLLM: its first served name; SGLang: model_path),
  // whichever alias was asked for (live_measure.cpp).
  if (measured.model_name && golden.model_name && *measured.model_name != *golden.model_name)
    return "measured on the model \"" + *measured.model_name + "\"" + g + "on \"" +
           *golden.model_name + "\" (τ belongs to a target and its drafter)";
  const std::string& definition = golden.tau_definition;
  if (!measured.tau_of(definition))
    return "the measurement has τ pooled only" + g +
           "gates on τ macro (import per-request data: --vllm-responses or --sglang-requests)";
  if (measured.formula(definition) != golden.formula(definition))
    return "τ " + definition + " is " + measured.formula(definition) + " in the measurement" + g +
           "counts " + golden.formula(definition);
  if (measured.num_speculative_tokens != golden.num_speculative_tokens)
    return "measured with " + std::to_string(measured.num_speculative_tokens) +
           " speculative tokens (block " + std::to_string(measured.block_size()) + ")" + g +
           "with " + std::to_string(golden.num_speculative_tokens) + " (block " +
           std::to_string(golden.block_size()) + ")";
  if (!measured.prompt_set_sha256)
    return "the measurement names no prompt set; import it with --prompts so it can be compared";
  if (!golden.prompt_set_sha256) return "the golden (" + golden.path + ") names no prompt set";
  if (measured.prompt_set_sha256_of_file != golden.prompt_set_sha256_of_file)
    return std::string("the prompt set is identified by the prompt file's bytes in ") +
           (measured.prompt_set_sha256_of_file ? "the measurement"
                                               : "the golden (" + golden.path + ")") +
           " (written before 0.2) but by the parsed prompts in the other; import or record it "
           "again with this draftgate";
  if (measured.prompt_set_rendering && golden.prompt_set_rendering &&
      *measured.prompt_set_rendering != *golden.prompt_set_rendering)
    return "the prompts were rendered with " +
           decode::describe_rendering(measured.prompt_set_rendering) + g + "with " +
           decode::describe_rendering(golden.prompt_set_rendering);
  if (*measured.prompt_set_sha256 != *golden.prompt_set_sha256)
    return "prompt set sha256 " + measured.prompt_set_sha256->substr(0, 12) + "…" + g +
           "was measured on " + golden.prompt_set_sha256->substr(0, 12) + "…";
  return std::nullopt;
}

void add_steps_accepting_at_least(const std::vector<std::int64_t>& histogram,
                                  std::vector<std::int64_t>& at_least) {
  std::int64_t here = 0;  // this request's steps that accepted ≥ a drafts
  for (std::size_t a = histogram.size(); a-- > 1;) {
    here += histogram[a];
    at_least[a - 1] += here;
  }
}

std::vector<double> acceptance_per_position(const std::vector<std::int64_t>& at_least,
                                            std::int64_t steps) {
  std::vector<double> out;
  for (std::int64_t d : at_least)
    out.push_back(static_cast<double>(d) / static_cast<double>(steps));
  return out;
}

}  // namespace draftgate::tau
