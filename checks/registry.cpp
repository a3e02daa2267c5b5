#include <algorithm>
#include <map>

#include "check.h"
#include "draftgate/error.h"

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

CheckResult run_check(const Check& check, const Artifacts& artifacts,
                      const nlohmann::json& params) {
  nlohmann::json merged = check.default_params();
  auto apply = [&](const nlohmann::json& overrides, const std::string& source) {
    if (overrides.is_null()) return;
    if (!overrides.is_object()) throw Error(source, "parameters must be a JSON object");
    for (const auto& [key, value] : overrides.items()) {
      if (!merged.contains(key))
        throw Error(source, "unknown parameter \"" + key + "\" of " + check.name() +
                                " (known: " + merged.dump() + ")");
      merged[key] = value;
    }
  };
  try {
    if (artifacts.golden && artifacts.golden->check_params.contains(check.name()))
      apply(artifacts.golden->check_params[check.name()], artifacts.golden->path);
    apply(params, check.name());
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

}  // namespace draftgate::checks
