#pragma once
// The gate's check framework: a check is a named decision over artifacts (target, drafter, step
// record, ...) with typed parameters; it returns a result — never throws for a failed check. Bad
// input (unreadable or inconsistent artifacts) is a draftgate::Error, reported as status "error"
// and exit code 2; any other exception inside a check becomes that check's error verdict too.
//
// Adding a check: docs/development/adding-a-check.md names every place a new check touches (this
// file's registry is the source of truth; CheckCatalogue.* fails when a place is missed). In short:
// one file `checks/NAME.cpp` with a Check subclass and `const bool registered =
// register_as<NAME>();`. Compare tensors with `metrics.h` (NMSE, KL, top-1 outside near-ties, the
// first non-finite element: NaN must fail, never pass); judge recorded training tensors at the
// precision they were computed in (`recorded_precision.h`). Name what was expected, what was
// measured, where, and what to do in every failure message.

#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "draftgate/arch/drafter.h"
#include "draftgate/golden/golden.h"
#include "draftgate/io/checkpoint.h"

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
  double seconds = 0;  // wall time of the check (set by run_check)
};

class Engine;

// The artifacts a run names; a check skips (with the reason) when one it needs is absent.
struct Artifacts {
  std::optional<std::filesystem::path> target;
  std::optional<std::filesystem::path> drafter;
  std::optional<std::filesystem::path> step_record;
  std::optional<std::filesystem::path> reference_dump;  // `draftgate forward` output
  std::optional<golden::Golden> golden;                 // read and validated up front
  const Engine* engine = nullptr;  // the engine process's model computations; null in the front end
  std::optional<tau::MeasuredTau> measured;  // `draftgate tau import` output
  // How text and messages prompts are rendered (--enable-thinking, --chat-template); the tokenizer
  // is the target's.
  decode::PromptOptions prompt_options;
};

// Model computations a check may ask for beyond reading files (libtorch). The engine process
// passes its implementation (model_engine.h) in Artifacts::engine; the torch-free front end has
// none, and hands a check whose runs_here() is false to the engine.
class Engine {
 public:
  virtual ~Engine() = default;
  // fc_excludes_target_layer with a step record: adds the per-slice evidence ("fed_slices") and
  // the positions judged to `result` and a problem per fed fc-input slice that is not its declared
  // tap (or is farther than params' `max_nmse` from it), over the first `max_positions` positions
  // (all when null). Returns the scope ("judged K of S positions").
  virtual std::string match_fed_features(const io::Checkpoint& target,
                                         const std::filesystem::path& step_record,
                                         const model::DrafterConfig& drafter,
                                         const nlohmann::json& params, CheckResult& result,
                                         std::vector<std::string>& problems) const = 0;
  // Why `step_record` (a record carrying no identity) cannot have been made with `target`: its
  // fc_input is not the target's taps wide, or no slice of it comes near any target layer (a
  // record of another target of the same shapes); nullopt when it may have been.
  virtual std::optional<std::string> foreign_record(
      const io::Checkpoint& target, const std::filesystem::path& step_record) const = 0;
  // Before any check runs: whether the run will ask for the target's bf16 forward over
  // `step_record`'s sequence — a check that reproduces the record's precision is selected
  // (`reproduces_precision`) and the record declares, or leaves undeclared, a precision below
  // float32. A streamed float32 walk computes that forward beside its own only then.
  virtual void plan_record_forwards(const std::filesystem::path& step_record,
                                    bool reproduces_precision) const = 0;
};

// One declared parameter of a check. `name` may be dotted: "f32.max_noise_ratio" is the
// max_noise_ratio of the nested "f32" budget, and run() reads it as
// params["f32"]["max_noise_ratio"]. A null default means optional: off unless given.
enum class ParamType { kBool, kInteger, kNumber, kString, kIntegerList };

struct Param {
  std::string name;
  ParamType type = ParamType::kNumber;
  nlohmann::json default_value;
  double min = 0, max = 0;           // kInteger, kNumber, kIntegerList elements: the closed range
  std::vector<std::string> choices;  // kString: the allowed values (empty: any string)
  std::string description;           // one line

  // "a number in [0, 1]", "one of ce, kl", ... for messages and --list.
  std::string expectation() const;
  // Whether `value` has the type and lies in the range (null only when the default is null).
  bool accepts(const nlohmann::json& value) const;
};

// Declaration helpers: one line per parameter in a check's params().
Param number_param(std::string name, nlohmann::json default_value, double min, double max,
                   std::string description);
Param integer_param(std::string name, nlohmann::json default_value, double min, double max,
                    std::string description);
Param bool_param(std::string name, bool default_value, std::string description);
Param string_param(std::string name, nlohmann::json default_value, std::vector<std::string> choices,
                   std::string description);
Param integer_list_param(std::string name, nlohmann::json default_value, double min, double max,
                         std::string description);

class Check {
 public:
  virtual ~Check() = default;
  virtual std::string name() const = 0;
  // One line each, printed by `draftgate check --list`.
  virtual std::string summary() const = 0;
  virtual std::string needs() const = 0;
  // The declared parameters: type, default, range, description. Every override (golden
  // check_params, suite params, --param) is validated against them before any check runs.
  virtual std::vector<Param> params() const = 0;
  // The defaults as the nested object run() receives (dotted names become nested objects).
  nlohmann::json default_params() const;
  virtual CheckResult run(const Artifacts& artifacts, const nlohmann::json& params) const = 0;
  // False when this process lacks what the check needs for these artifacts: the torch-free front
  // end then hands the run to the engine.
  virtual bool runs_here(const Artifacts& /*artifacts*/) const { return true; }
  // True when the check reads the drafter's weights for these artifacts: a config-only drafter
  // (io::config_only) then skips it by name while the checks that read configs still run.
  virtual bool reads_drafter_weights(const Artifacts& /*artifacts*/) const { return false; }
  // False when the check reads no checkpoint's weight values for these artifacts (configs and
  // safetensors headers only): a run of such checks takes no weights fingerprint for its report.
  virtual bool reads_weight_values(const Artifacts& /*artifacts*/) const { return true; }
  // True for a check that computes the target over a step record's sequence: a record without
  // identity is then first matched against the target (record_provenance.h), whose forward the
  // check needs anyway.
  virtual bool judges_record_against_target() const { return false; }
  // True for a check that measures what a step record's declared precision explains by running
  // the target at that precision (recorded_precision.h): the run plans that forward
  // (Engine::plan_record_forwards).
  virtual bool reproduces_record_precision() const { return false; }
};

// Registry: each check's file registers itself, so adding a check is one file.
void register_check(std::unique_ptr<Check> check);
std::vector<const Check*> all_checks();  // sorted by name
const Check* find_check(const std::string& name);
// "fc_excludes_target_layer, hidden_state_parity, …": every registered check's name, for messages
// that refuse an unknown one.
std::string check_names();

// Validates `overrides` (an object of parameter values, nested or with dotted names) against the
// check's declaration and returns them flat ({"f32.max_noise_ratio": 1e-3}). draftgate::Error
// naming `source`, the check, the parameter and the expected type and range otherwise.
nlohmann::json validated_overrides(const Check& check, const nlohmann::json& overrides,
                                   const std::string& source);

// The parameters run() receives: the defaults, overridden by the golden's check_params for the
// check, overridden by `params`, all validated (draftgate::Error otherwise).
nlohmann::json resolve_params(const Check& check, const Artifacts& artifacts,
                              const nlohmann::json& params, const std::string& source);

// Runs one check with resolve_params(); a draftgate::Error becomes status kError with its one-line
// message.
CheckResult run_check(const Check& check, const Artifacts& artifacts, const nlohmann::json& params);

// Every registered check with its summary, needs and parameters: `draftgate check --list`.
std::string describe_checks_text();
nlohmann::json describe_checks_json();

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
