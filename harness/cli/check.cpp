// `draftgate check`: runs the gate's checks over the given artifacts (flags, or suite files); a
// table on stdout (and a verdict matrix for several suites), JSON and JUnit reports, exit 0 all
// pass, 1 a check failed, 2 bad input. --verify-expectations instead exits 0 iff every verdict is
// the one its suite expects (how the bundled fixtures prove each check both ways). The front end
// runs it when every selected check is structural; otherwise the engine does.

#include "check.h"

#include <algorithm>
#include <iostream>

#include "draftgate/error.h"
#include "draftgate/io/atomic_file.h"
#include "report.h"
#include "suite.h"
#include "verbs.h"

namespace draftgate::cli {
namespace {

struct CheckOptions {
  std::vector<std::string> suites;
  std::string target, drafter, step_record, golden, reference_dump, measured;
  std::vector<std::string> only;
  std::vector<std::string> params;  // check.param=json
  std::string report, junit;
  bool fail_on_skip = false;
  bool verify_expectations = false;
  int skip_exit_code = 0;
};

std::map<std::string, nlohmann::json> parse_params(const std::vector<std::string>& specs) {
  std::map<std::string, nlohmann::json> params;
  for (const auto& p : specs) {
    const auto dot = p.find('.'), eq = p.find('=');
    if (dot == std::string::npos || eq == std::string::npos || eq < dot)
      throw Error("--param", "\"" + p + "\" is not CHECK.NAME=VALUE");
    nlohmann::json value;
    try {
      value = nlohmann::json::parse(p.substr(eq + 1));
    } catch (const nlohmann::json::exception&) {
      value = p.substr(eq + 1);  // a bare word is a string
    }
    const std::string check = p.substr(0, dot);
    if (checks::find_check(check) == nullptr)
      throw Error("--param", "unknown check \"" + check + "\"");
    params[check][p.substr(dot + 1, eq - dot - 1)] = value;
  }
  return params;
}

// Applies the command-line selection and parameters to a suite's instances.
std::vector<checks::CheckInstance> select(std::vector<checks::CheckInstance> instances,
                                          const CheckOptions& opt,
                                          const std::map<std::string, nlohmann::json>& params) {
  if (!opt.only.empty()) {
    for (const auto& name : opt.only)
      if (checks::find_check(name) == nullptr &&
          std::none_of(instances.begin(), instances.end(),
                       [&](const auto& in) { return in.name == name; }))
        throw Error("--only", "unknown check \"" + name + "\"");
    instances.erase(std::remove_if(instances.begin(), instances.end(),
                                   [&](const auto& in) {
                                     return std::find(opt.only.begin(), opt.only.end(), in.name) ==
                                                opt.only.end() &&
                                            std::find(opt.only.begin(), opt.only.end(),
                                                      in.check->name()) == opt.only.end();
                                   }),
                    instances.end());
  }
  for (auto& in : instances) {
    auto it = params.find(in.check->name());
    if (it == params.end()) continue;
    if (in.params.is_null()) in.params = nlohmann::json::object();
    for (const auto& [k, v] : it->second.items()) in.params[k] = v;
  }
  return instances;
}

struct PlannedSuite {
  checks::Suite suite;
  checks::Artifacts artifacts;
  std::vector<checks::CheckInstance> instances;
};

// Reads every suite, opens its artifacts and selects its instances before anything runs or prints.
std::vector<PlannedSuite> plan(const CheckOptions& opt) {
  const auto params = parse_params(opt.params);
  std::vector<checks::Suite> suites;
  for (const auto& path : opt.suites) suites.push_back(checks::read_suite(path));
  if (suites.empty())
    suites.push_back({"", "draftgate", {}, checks::all_check_instances(), true, {}});
  std::vector<PlannedSuite> planned;
  for (auto& suite : suites) {
    checks::ArtifactPaths& p = suite.artifacts;
    if (!opt.target.empty()) p.target = opt.target;
    if (!opt.drafter.empty()) p.drafter = opt.drafter;
    if (!opt.step_record.empty()) p.step_record = opt.step_record;
    if (!opt.golden.empty()) p.golden = opt.golden;
    if (!opt.reference_dump.empty()) p.reference_dump = opt.reference_dump;
    if (!opt.measured.empty()) p.measured = opt.measured;
    checks::Artifacts artifacts = checks::open_artifacts(p);
    auto instances = select(suite.checks, opt, params);
    planned.push_back({std::move(suite), std::move(artifacts), std::move(instances)});
  }
  return planned;
}

// In the front end the registry holds the structural checks only, so "every check" (no --only, a
// suite without a check list) means the engine's; a plan that names another check (or fails to
// read) or a check that cannot run here goes to the engine, which owns the verdict and any error
// message.
std::vector<PlannedSuite> plan_in_front_end(const CheckOptions& opt) {
  std::vector<PlannedSuite> planned;
  try {
    planned = plan(opt);
  } catch (const Error&) {
    throw NeedsEngine{};
  }
  for (const auto& p : planned) {
    if (p.suite.every_check && opt.only.empty()) throw NeedsEngine{};
    for (const auto& in : p.instances)
      if (!in.check->runs_here(p.artifacts)) throw NeedsEngine{};
  }
  return planned;
}

int run_check_verb(const CheckOptions& opt, bool front_end) {
  const std::vector<PlannedSuite> planned = front_end ? plan_in_front_end(opt) : plan(opt);
  std::vector<checks::SuiteRun> runs;
  for (const auto& p : planned) {
    checks::SuiteRun run{p.suite.name, {}, p.suite.expect};
    run.results = checks::run_instances(p.instances, p.artifacts);
    if (planned.size() > 1) std::cout << "== " << p.suite.name << " (" << p.suite.path << ")\n";
    std::cout << checks::text_table(run.results);
    for (const auto& r : run.results)
      if (r.status == checks::Status::kError && !run.expect.count(r.check))
        std::cerr << "draftgate: error: " << r.message << "\n";
    runs.push_back(std::move(run));
  }
  if (runs.size() > 1) std::cout << "\nverdicts\n" << checks::verdict_matrix(runs);

  if (!opt.report.empty()) {
    const nlohmann::json report = runs.size() == 1 && opt.suites.empty()
                                      ? checks::json_report(runs[0].results)
                                      : checks::json_report(runs);
    io::write_text_atomically(opt.report, report.dump(2) + "\n");
  }
  if (!opt.junit.empty()) io::write_text_atomically(opt.junit, checks::junit_report(runs));

  if (opt.verify_expectations) {
    bool met = true;
    for (const auto& run : runs) {
      if (run.expect.empty())
        throw Error(run.name, "--verify-expectations needs suites with an \"expect\" block");
      for (const auto& name : checks::unmet_expectations(run)) {
        met = false;
        std::cerr << "draftgate: " << run.name << ": " << name << " gave an unexpected verdict\n";
      }
    }
    std::cout << (met ? "every verdict is the expected one\n" : "UNEXPECTED verdicts\n");
    return met ? 0 : 1;
  }
  std::vector<checks::CheckResult> all;
  for (const auto& run : runs) all.insert(all.end(), run.results.begin(), run.results.end());
  const bool all_skipped = std::all_of(
      all.begin(), all.end(), [](const auto& r) { return r.status == checks::Status::kSkip; });
  if (all_skipped && opt.skip_exit_code != 0) return opt.skip_exit_code;
  return checks::exit_code(all, opt.fail_on_skip);
}

void add_check_verb(CLI::App& app, VerbRunner* runner, bool front_end) {
  auto opt = std::make_shared<CheckOptions>();
  CLI::App* cmd =
      app.add_subcommand("check", "Run the gate's checks on a target, drafter and step record");
  cmd->add_option("--suite", opt->suites,
                  "Suite file(s): artifacts and check instances (JSON); flags override paths");
  cmd->add_option("--target", opt->target,
                  "Target checkpoint directory (metadata-only is enough for layer_path)");
  cmd->add_option("--drafter", opt->drafter, "DFlash drafter checkpoint directory");
  cmd->add_option("--step-record", opt->step_record, "A training step record (.safetensors)");
  cmd->add_option("--golden", opt->golden, "Golden baseline of the reference drafter (JSON)");
  cmd->add_option("--reference-dump", opt->reference_dump,
                  "Hidden states dumped elsewhere (draftgate forward format) for parity");
  cmd->add_option("--measured", opt->measured,
                  "Measured τ from a serving engine (draftgate tau import): min_tau compares it "
                  "with a measured golden instead of decoding");
  cmd->add_option("--only", opt->only, "Checks to run, comma-separated (default: all)")
      ->delimiter(',');
  cmd->add_option("--param", opt->params, "CHECK.NAME=VALUE (JSON value), repeatable");
  cmd->add_option("--report", opt->report, "Write a JSON report");
  cmd->add_option("--junit", opt->junit, "Write a JUnit XML report");
  cmd->add_flag("--fail-on-skip", opt->fail_on_skip, "Treat skipped checks as failures");
  cmd->add_flag("--verify-expectations", opt->verify_expectations,
                "Exit 0 iff every verdict equals its suite's \"expect\"");
  cmd->add_option(
      "--skip-exit-code", opt->skip_exit_code,
      "Exit with this code when every selected check skipped (ctest's SKIP_RETURN_CODE)");
  cmd->callback([opt, runner, front_end] {
    *runner = [opt, front_end] { return run_check_verb(*opt, front_end); };
  });
}

}  // namespace

void add_check(CLI::App& app, VerbRunner* runner) { add_check_verb(app, runner, false); }
void add_structural_check(CLI::App& app, VerbRunner* runner) { add_check_verb(app, runner, true); }

}  // namespace draftgate::cli
