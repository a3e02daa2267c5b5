#pragma once
// The gate's check framework: a check is a named decision over artifacts (target, drafter, step
// record, ...) with typed parameters; it returns a result — never throws for a failed check. Bad
// input (unreadable or inconsistent artifacts) is a draftgate::Error, reported as status "error"
// and exit code 2.

#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "draftgate/golden/golden.h"

namespace draftgate::checks {

enum class Status { kPass, kFail, kSkip, kError };
const char* status_name(Status status);

struct CheckResult {
  std::string check;
  Status status = Status::kPass;
  // What was expected, what was found, where, and what to do.
  std::string message;
  nlohmann::json measured = nlohmann::json::object();
  nlohmann::json thresholds = nlohmann::json::object();
  nlohmann::json evidence = nlohmann::json::object();
};

// The artifacts a run names; a check skips (with the reason) when one it needs is absent.
struct Artifacts {
  std::optional<std::filesystem::path> target;
  std::optional<std::filesystem::path> drafter;
  std::optional<std::filesystem::path> step_record;
  std::optional<std::filesystem::path> reference_dump;  // `draftgate forward` output
  std::optional<golden::Golden> golden;                 // read and validated up front
  std::optional<tau::MeasuredTau> measured;             // `draftgate tau import` output
};

class Check {
 public:
  virtual ~Check() = default;
  virtual std::string name() const = 0;
  virtual std::string summary() const = 0;
  // Parameters with their defaults; run() receives them merged with the user's.
  virtual nlohmann::json default_params() const = 0;
  virtual CheckResult run(const Artifacts& artifacts, const nlohmann::json& params) const = 0;
  // False when this process lacks what the check needs for these artifacts: the torch-free front
  // end then hands the run to the engine.
  virtual bool runs_here(const Artifacts& /*artifacts*/) const { return true; }
};

// Registry: each check's file registers itself, so adding a check is one file.
void register_check(std::unique_ptr<Check> check);
std::vector<const Check*> all_checks();  // sorted by name
const Check* find_check(const std::string& name);

// Runs one check with its defaults, overridden by the golden's check_params for it, overridden by
// `params` (unknown parameter names are bad input); a draftgate::Error becomes status kError with
// its one-line message.
CheckResult run_check(const Check& check, const Artifacts& artifacts, const nlohmann::json& params);

// Helper for check files: `static const bool registered = register_as<MyCheck>();`
template <class T>
bool register_as() {
  register_check(std::make_unique<T>());
  return true;
}

CheckResult skip(const std::string& check, const std::string& why);
// Pass with `pass_message` when `problems` is empty, else fail with the problems joined by "; ".
CheckResult conclude(CheckResult result, const std::vector<std::string>& problems,
                     const std::string& pass_message);

}  // namespace draftgate::checks
