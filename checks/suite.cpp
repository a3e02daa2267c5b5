#include "checks/suite.h"

#include <tuple>

#include "draftgate/error.h"
#include "draftgate/io/artifact_kind.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/io/input_file.h"
#include "draftgate/io/json_util.h"

namespace draftgate::checks {
namespace fs = std::filesystem;

namespace {

Status parse_status(const std::string& s, const std::string& file) {
  for (Status st : {Status::kPass, Status::kFail, Status::kSkip, Status::kError})
    if (s == status_name(st)) return st;
  throw Error(file, "expected verdict \"" + s + "\" is not pass, fail, skip or error");
}

}  // namespace

std::vector<CheckInstance> all_check_instances() {
  std::vector<CheckInstance> out;
  for (const Check* c : all_checks()) out.push_back({c->name(), c, nullptr});
  return out;
}

Suite read_suite(const fs::path& path) {
  const std::string file = path.string();
  const nlohmann::json doc = io::read_json_file(path);
  if (!doc.is_object()) throw Error(file, "a suite file must be a JSON object");
  for (const auto& [key, value] : doc.items())
    if (key != "schema" && key != "name" && key != "artifacts" && key != "checks" &&
        key != "expect")
      throw Error(file, "unknown suite field \"" + key + "\"");
  if (!doc.contains("schema") || !doc["schema"].is_string() || doc["schema"] != kSuiteSchema)
    throw Error(file, "suite schema must be \"" + std::string(kSuiteSchema) + "\"");
  Suite s;
  s.path = file;
  s.name = doc.contains("name") && doc["name"].is_string() ? doc["name"].get<std::string>()
                                                           : path.stem().string();
  const fs::path base = path.parent_path();
  if (doc.contains("artifacts")) {
    const auto& a = doc["artifacts"];
    if (!a.is_object()) throw Error(file, "artifacts must be an object of paths");
    const std::map<std::string, std::optional<fs::path>*> slots = {
        {"target", &s.artifacts.target},
        {"drafter", &s.artifacts.drafter},
        {"step_record", &s.artifacts.step_record},
        {"golden", &s.artifacts.golden},
        {"reference_dump", &s.artifacts.reference_dump},
        {"measured", &s.artifacts.measured}};
    for (const auto& [key, value] : a.items()) {
      auto it = slots.find(key);
      if (it == slots.end()) throw Error(file, "unknown artifact \"" + key + "\"");
      if (!value.is_string() || value.get<std::string>().empty())
        throw Error(file, "artifact \"" + key + "\" must be a non-empty path string");
      const fs::path p = value.get<std::string>();
      *it->second = (p.is_absolute() ? p : base / p).lexically_normal();
    }
  }
  if (!doc.contains("checks")) {
    s.every_check = true;
    s.checks = all_check_instances();
  } else {
    if (!doc["checks"].is_array()) throw Error(file, "checks must be an array");
    for (const auto& entry : doc["checks"]) {
      if (!entry.is_object() || !entry.contains("check") || !entry["check"].is_string())
        throw Error(file, "each checks entry needs a \"check\" name: " + io::json_excerpt(entry));
      CheckInstance in;
      const std::string check = entry["check"].get<std::string>();
      in.check = find_check(check);
      if (in.check == nullptr)
        throw Error(file, "unknown check \"" + check + "\"", "the checks: " + check_names());
      in.name = check;
      if (entry.contains("name")) {
        if (!entry["name"].is_string())
          throw Error(file,
                      "a check instance's \"name\" must be a string: " + io::json_excerpt(entry));
        in.name = entry["name"].get<std::string>();
      }
      if (entry.contains("params"))
        in.params = validated_overrides(*in.check, entry["params"], file);
      for (const auto& other : s.checks)
        if (other.name == in.name)
          throw Error(file, "check instance \"" + in.name + "\" appears twice; give it a name");
      s.checks.push_back(std::move(in));
    }
  }
  if (s.checks.empty())
    throw Error(file, "\"checks\" is empty: the suite would run nothing",
                "list the checks to run, or leave \"checks\" out to run every check");
  if (doc.contains("expect")) {
    if (!doc["expect"].is_object()) throw Error(file, "expect must map instance names to verdicts");
    for (const auto& [key, value] : doc["expect"].items()) {
      if (!value.is_string()) throw Error(file, "expect." + key + " must be a verdict string");
      bool known = false;
      for (const auto& in : s.checks) known = known || in.name == key;
      if (!known) throw Error(file, "expect names \"" + key + "\", which the suite does not run");
      s.expect[key] = parse_status(value.get<std::string>(), file);
    }
  }
  return s;
}

Artifacts open_artifacts(const ArtifactPaths& paths) {
  // Each artifact in its own slot first: a drafter given as --target is named as one.
  using io::ArtifactKind;
  for (const auto& [path, kind, flag] :
       {std::tuple{paths.target, ArtifactKind::kTarget, "--target"},
        {paths.drafter, ArtifactKind::kDrafter, "--drafter"},
        {paths.step_record, ArtifactKind::kStepRecord, "--step-record"},
        {paths.reference_dump, ArtifactKind::kReferenceDump, "--reference-dump"},
        {paths.golden, ArtifactKind::kGolden, "--golden"},
        {paths.measured, ArtifactKind::kMeasuredTau, "--measured"}})
    if (path) {
      // A wrong path is one line naming it, before several checks each fail on it their own way.
      if (kind == ArtifactKind::kTarget || kind == ArtifactKind::kDrafter) {
        io::require_input_directory(*path, std::string("give the checkpoint directory as ") + flag);
        io::require_checkpoint_config(*path);
      } else
        io::require_input_file(*path);
      io::require_slot(*path, kind, flag);
    }
  Artifacts a;
  a.target = paths.target;
  a.drafter = paths.drafter;
  a.step_record = paths.step_record;
  a.reference_dump = paths.reference_dump;
  if (paths.golden) {
    a.golden = golden::read_golden(*paths.golden);
    // Every check's overrides in the golden are valid before anything runs, selected or not.
    for (const auto& [check, params] : a.golden->check_params.items()) {
      const Check* c = find_check(check);
      if (c == nullptr)
        throw Error(a.golden->path, "check_params names unknown check \"" + check + "\"");
      validated_overrides(*c, params, a.golden->path);
    }
  }
  if (paths.measured) a.measured = tau::read_measured_tau(*paths.measured);
  return a;
}

std::vector<CheckResult> run_instances(const std::vector<CheckInstance>& instances,
                                       const Artifacts& artifacts) {
  std::vector<CheckResult> results;
  for (const auto& in : instances) {
    results.push_back(run_check(*in.check, artifacts, in.params));
    results.back().check = in.name;
  }
  return results;
}

}  // namespace draftgate::checks
