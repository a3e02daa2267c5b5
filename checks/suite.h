#pragma once
// Suite files: the artifacts of one gate run and the check instances to run on them, in JSON
// (schema "draftgate.suite/1"). Paths are relative to the suite file.
//
//   {"schema": "draftgate.suite/1",
//    "name": "qwen35-reference",
//    "artifacts": {"target": "...", "drafter": "...", "step_record": "...", "golden": "...",
//                  "reference_dump": "..."},
//    "checks": [{"check": "min_tau", "params": {"min_ratio": 0.9}}, {"check": "layer_path"}],
//    "expect": {"min_tau": "pass", "loss_type": "fail"}}
//
// "checks" defaults to every registered check; an entry may carry "name" to run one check twice
// with different parameters. "expect" (optional) is the verdict each instance should give — the
// bundled fixtures use it to prove each check both ways.

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "checks/check.h"

namespace draftgate::checks {

inline constexpr const char* kSuiteSchema = "draftgate.suite/1";

struct CheckInstance {
  std::string name;  // the check's name unless the suite renames it
  const Check* check = nullptr;
  nlohmann::json params;  // null = defaults
};

struct ArtifactPaths {
  std::optional<std::filesystem::path> target, drafter, step_record, golden, reference_dump;
  std::optional<std::filesystem::path> measured;  // a measured-τ file (draftgate tau import)
};

struct Suite {
  std::string path;
  std::string name;
  ArtifactPaths artifacts;
  std::vector<CheckInstance> checks;
  bool every_check = false;  // no "checks" list: every registered check
  std::map<std::string, Status> expect;
};

// Validates the schema, every field and check name; draftgate::Error naming the file otherwise.
Suite read_suite(const std::filesystem::path& path);

// Every registered check with its defaults.
std::vector<CheckInstance> all_check_instances();

// Opens the artifacts: reads and validates the golden file (draftgate::Error when malformed).
Artifacts open_artifacts(const ArtifactPaths& paths);

// Runs the instances; each result carries its instance name.
std::vector<CheckResult> run_instances(const std::vector<CheckInstance>& instances,
                                       const Artifacts& artifacts);

}  // namespace draftgate::checks
