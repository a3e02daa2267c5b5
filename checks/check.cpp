#include "checks/check.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <sstream>

#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/io/json_util.h"

namespace draftgate::checks {

namespace {
std::map<std::string, std::unique_ptr<Check>>& registry() {
  static std::map<std::string, std::unique_ptr<Check>> r;
  return r;
}

CheckResult verdict(const std::string& check, Status status, const std::string& message) {
  CheckResult r;
  r.check = check;
  r.status = status;
  r.message = message;
  return r;
}

// The file a library error most likely concerns: the record a check reads before the models.
std::string artifact_named(const Artifacts& a) {
  if (a.step_record) return a.step_record->string();
  if (a.reference_dump) return a.reference_dump->string();
  if (a.drafter) return a.drafter->string();
  if (a.target) return a.target->string();
  return "draftgate";
}

// Library messages (libtorch's especially) carry multi-line backtraces; keep the first line.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }
}  // namespace

const char* status_name(Status status) {
  switch (status) {
    case Status::kPass:
      return "pass";
    case Status::kFail:
      return "fail";
    case Status::kSkip:
      return "skip";
    case Status::kError:
      return "error";
  }
  return "error";
}

void register_check(std::unique_ptr<Check> check) {
  const std::string name = check->name();
  registry()[name] = std::move(check);
}

std::vector<const Check*> all_checks() {
  std::vector<const Check*> out;
  for (const auto& [name, check] : registry()) out.push_back(check.get());
  return out;
}

const Check* find_check(const std::string& name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : it->second.get();
}

std::string check_names() {
  std::string names;
  for (const auto& [name, check] : registry()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

CheckResult skip(const std::string& check, const std::string& why) {
  return verdict(check, Status::kSkip, why);
}

CheckResult conclude(CheckResult r, const std::vector<std::string>& problems,
                     const std::string& pass_message) {
  r.status = problems.empty() ? Status::kPass : Status::kFail;
  r.message = problems.empty() ? pass_message : "";
  for (const auto& m : problems) r.message += (r.message.empty() ? "" : "; ") + m;
  return r;
}

namespace {

const char* type_word(ParamType type) {
  switch (type) {
    case ParamType::kBool:
      return "bool";
    case ParamType::kInteger:
      return "integer";
    case ParamType::kNumber:
      return "number";
    case ParamType::kString:
      return "string";
    case ParamType::kIntegerList:
      return "integer list";
  }
  return "value";
}

bool in_range(const Param& p, const nlohmann::json& v) {
  if (!v.is_number()) return false;
  const double x = v.get<double>();
  return std::isfinite(x) && x >= p.min && x <= p.max;
}

Param make_param(std::string name, ParamType type, nlohmann::json default_value, double min,
                 double max, std::vector<std::string> choices, std::string description) {
  Param p{std::move(name),       type, std::move(default_value), min, max, std::move(choices),
          std::move(description)};
  return p;
}

const Param* find_param(const std::vector<Param>& params, const std::string& name) {
  for (const auto& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

nlohmann::json::json_pointer pointer_of(const std::string& dotted) {
  std::string pointer;
  std::istringstream parts(dotted);
  for (std::string part; std::getline(parts, part, '.');) pointer += "/" + part;
  return nlohmann::json::json_pointer(pointer);
}

std::string known_names(const std::vector<Param>& params) {
  std::string s;
  for (const auto& p : params) s += (s.empty() ? "" : ", ") + p.name;
  return s.empty() ? "none" : s;
}

// Validates one override at `path` (dotted), recursing into objects that address nested
// parameters; adds the leaves to `flat`.
void flatten_into(const Check& check, const std::vector<Param>& params, const std::string& path,
                  const nlohmann::json& value, const std::string& source, nlohmann::json& flat) {
  if (const Param* p = find_param(params, path)) {
    if (!p->accepts(value))
      throw Error(source, "parameter " + check.name() + "." + path + " = " +
                              io::json_excerpt(value) + ": expected " + p->expectation());
    flat[path] = value;
    return;
  }
  const bool is_prefix = std::any_of(params.begin(), params.end(), [&](const Param& p) {
    return p.name.rfind(path + ".", 0) == 0;
  });
  if (is_prefix && value.is_object()) {
    for (const auto& [key, inner] : value.items())
      flatten_into(check, params, path + "." + key, inner, source, flat);
    return;
  }
  throw Error(source, is_prefix ? "parameter " + check.name() + "." + path +
                                      " must be an object of " + path + ".* parameters"
                                : "unknown parameter \"" + path + "\" of " + check.name() +
                                      " (known: " + known_names(params) + ")");
}

}  // namespace

std::string Param::expectation() const {
  auto range = [&] { return "[" + format_number(min, 6) + ", " + format_number(max, 6) + "]"; };
  std::string s;
  switch (type) {
    case ParamType::kBool:
      s = "true or false";
      break;
    case ParamType::kInteger:
      s = "an integer in " + range();
      break;
    case ParamType::kNumber:
      s = "a number in " + range();
      break;
    case ParamType::kString:
      if (choices.empty()) {
        s = "a string";
      } else {
        s = "one of";
        for (std::size_t i = 0; i < choices.size(); ++i) s += (i ? ", " : " ") + choices[i];
      }
      break;
    case ParamType::kIntegerList:
      s = "a non-empty array of integers in " + range();
      break;
  }
  return default_value.is_null() ? s + ", or null (off)" : s;
}

bool Param::accepts(const nlohmann::json& v) const {
  if (v.is_null()) return default_value.is_null();
  switch (type) {
    case ParamType::kBool:
      return v.is_boolean();
    case ParamType::kInteger:
      return v.is_number_integer() && in_range(*this, v);
    case ParamType::kNumber:
      return in_range(*this, v);
    case ParamType::kString:
      return v.is_string() && (choices.empty() || std::find(choices.begin(), choices.end(),
                                                            v.get<std::string>()) != choices.end());
    case ParamType::kIntegerList:
      return v.is_array() && !v.empty() &&
             std::all_of(v.begin(), v.end(), [&](const nlohmann::json& e) {
               return e.is_number_integer() && in_range(*this, e);
             });
  }
  return false;
}

Param number_param(std::string name, nlohmann::json default_value, double min, double max,
                   std::string description) {
  return make_param(std::move(name), ParamType::kNumber, std::move(default_value), min, max, {},
                    std::move(description));
}
Param integer_param(std::string name, nlohmann::json default_value, double min, double max,
                    std::string description) {
  return make_param(std::move(name), ParamType::kInteger, std::move(default_value), min, max, {},
                    std::move(description));
}
Param bool_param(std::string name, bool default_value, std::string description) {
  return make_param(std::move(name), ParamType::kBool, default_value, 0, 0, {},
                    std::move(description));
}
Param string_param(std::string name, nlohmann::json default_value, std::vector<std::string> choices,
                   std::string description) {
  return make_param(std::move(name), ParamType::kString, std::move(default_value), 0, 0,
                    std::move(choices), std::move(description));
}
Param integer_list_param(std::string name, nlohmann::json default_value, double min, double max,
                         std::string description) {
  return make_param(std::move(name), ParamType::kIntegerList, std::move(default_value), min, max,
                    {}, std::move(description));
}

nlohmann::json Check::default_params() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& p : params()) out[pointer_of(p.name)] = p.default_value;
  return out;
}

nlohmann::json validated_overrides(const Check& check, const nlohmann::json& overrides,
                                   const std::string& source) {
  nlohmann::json flat = nlohmann::json::object();
  if (overrides.is_null()) return flat;
  if (!overrides.is_object())
    throw Error(source, "parameters of " + check.name() + " must be a JSON object, got " +
                            io::json_excerpt(overrides));
  const std::vector<Param> params = check.params();
  for (const auto& [key, value] : overrides.items())
    flatten_into(check, params, key, value, source, flat);
  return flat;
}

nlohmann::json resolve_params(const Check& check, const Artifacts& artifacts,
                              const nlohmann::json& params, const std::string& source) {
  nlohmann::json merged = check.default_params();
  auto apply = [&](const nlohmann::json& flat) {
    for (const auto& [path, value] : flat.items()) merged[pointer_of(path)] = value;
  };
  if (artifacts.golden && artifacts.golden->check_params.contains(check.name()))
    apply(validated_overrides(check, artifacts.golden->check_params[check.name()],
                              artifacts.golden->path));
  apply(validated_overrides(check, params, source));
  return merged;
}

std::string describe_checks_text() {
  std::ostringstream out;
  for (const Check* c : all_checks()) {
    out << c->name() << ": " << c->summary() << "\n  needs: " << c->needs() << "\n";
    for (const auto& p : c->params())
      out << "  " << p.name << " (" << type_word(p.type) << ", default "
          << (p.default_value.is_null() ? "off" : p.default_value.dump()) << "; " << p.expectation()
          << "): " << p.description << "\n";
  }
  return out.str();
}

nlohmann::json describe_checks_json() {
  nlohmann::json checks = nlohmann::json::array();
  for (const Check* c : all_checks()) {
    nlohmann::json params = nlohmann::json::array();
    for (const auto& p : c->params()) {
      nlohmann::json j = {{"name", p.name},
                          {"type", type_word(p.type)},
                          {"default", p.default_value},
                          {"expected", p.expectation()},
                          {"description", p.description}};
      if (p.type == ParamType::kInteger || p.type == ParamType::kNumber ||
          p.type == ParamType::kIntegerList)
        j["range"] = {p.min, p.max};
      if (!p.choices.empty()) j["choices"] = p.choices;
      params.push_back(std::move(j));
    }
    checks.push_back({{"name", c->name()},
                      {"summary", c->summary()},
                      {"needs", c->needs()},
                      {"params", std::move(params)}});
  }
  return {{"checks", std::move(checks)}};
}

namespace {

// The verdict of one check: a draftgate::Error or any other exception is its error verdict.
CheckResult verdict_of(const Check& check, const Artifacts& artifacts,
                       const nlohmann::json& params) {
  try {
    const nlohmann::json merged = resolve_params(check, artifacts, params, check.name());
    if (artifacts.drafter && check.reads_drafter_weights(artifacts) &&
        io::config_only(*artifacts.drafter))
      return skip(check.name(), "needs the drafter's weights: " + artifacts.drafter->string() +
                                    " holds config.json only (no model.safetensors, "
                                    "model.safetensors.index.json or *.safetensors yet)");
    CheckResult r = check.run(artifacts, merged);
    r.check = check.name();
    r.thresholds.update(merged);
    return r;
  } catch (const Error& e) {
    return verdict(check.name(), Status::kError, e.one_line());
  } catch (const std::exception& e) {
    // A library error inside one check (shape mismatch, index out of range, allocation) is that
    // check's error verdict; the other checks still run and the reports are still written.
    return verdict(check.name(), Status::kError,
                   Error(artifact_named(artifacts),
                         check.name() + " could not complete: " + first_line(e.what()))
                       .one_line());
  }
}

}  // namespace

CheckResult run_check(const Check& check, const Artifacts& artifacts,
                      const nlohmann::json& params) {
  const auto start = std::chrono::steady_clock::now();
  CheckResult r = verdict_of(check, artifacts, params);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace draftgate::checks
