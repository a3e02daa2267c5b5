// `draftgate check`: runs the gate's checks over the given artifacts; a table on stdout, JSON and
// JUnit reports, exit 0 all pass, 1 a check failed, 2 bad input.

#include "check.h"

#include <algorithm>
#include <iostream>

#include "draftgate/error.h"
#include "draftgate/io/atomic_file.h"
#include "report.h"
#include "verbs.h"

namespace draftgate::cli {
namespace {

struct CheckOptions {
  std::string target, drafter, step_record;
  std::vector<std::string> only;
  std::vector<std::string> params;  // check.param=json
  std::string report, junit;
  bool fail_on_skip = false;
  int skip_exit_code = 0;
};

int run_check_verb(const CheckOptions& opt) {
  checks::Artifacts artifacts;
  if (!opt.target.empty()) artifacts.target = opt.target;
  if (!opt.drafter.empty()) artifacts.drafter = opt.drafter;
  if (!opt.step_record.empty()) artifacts.step_record = opt.step_record;

  std::map<std::string, nlohmann::json> params;
  for (const auto& p : opt.params) {
    const auto dot = p.find('.'), eq = p.find('=');
    if (dot == std::string::npos || eq == std::string::npos || eq < dot)
      throw Error("--param", "\"" + p + "\" is not CHECK.NAME=VALUE");
    nlohmann::json value;
    try {
      value = nlohmann::json::parse(p.substr(eq + 1));
    } catch (const nlohmann::json::exception&) {
      value = p.substr(eq + 1);  // a bare word is a string
    }
    params[p.substr(0, dot)][p.substr(dot + 1, eq - dot - 1)] = value;
  }
  std::vector<const checks::Check*> selected;
  if (opt.only.empty()) {
    selected = checks::all_checks();
  } else {
    for (const auto& name : opt.only) {
      const checks::Check* c = checks::find_check(name);
      if (c == nullptr) throw Error("--only", "unknown check \"" + name + "\"");
      selected.push_back(c);
    }
  }
  for (const auto& [name, value] : params)
    if (checks::find_check(name) == nullptr)
      throw Error("--param", "unknown check \"" + name + "\"");

  std::vector<checks::CheckResult> results;
  for (const checks::Check* c : selected)
    results.push_back(checks::run_check(
        *c, artifacts, params.count(c->name()) ? params[c->name()] : nlohmann::json()));
  std::cout << checks::text_table(results);
  if (!opt.report.empty())
    io::write_text_atomically(opt.report, checks::json_report(results).dump(2) + "\n");
  if (!opt.junit.empty()) io::write_text_atomically(opt.junit, checks::junit_report(results));
  for (const auto& r : results)
    if (r.status == checks::Status::kError) std::cerr << "draftgate: error: " << r.message << "\n";
  const bool all_skipped = std::all_of(results.begin(), results.end(), [](const auto& r) {
    return r.status == checks::Status::kSkip;
  });
  if (all_skipped && opt.skip_exit_code != 0) return opt.skip_exit_code;
  return checks::exit_code(results, opt.fail_on_skip);
}

}  // namespace

void add_check(CLI::App& app, VerbRunner* runner) {
  auto opt = std::make_shared<CheckOptions>();
  CLI::App* cmd =
      app.add_subcommand("check", "Run the gate's checks on a target, drafter and step record");
  cmd->add_option("--target", opt->target,
                  "Target checkpoint directory (metadata-only is enough for layer_path)");
  cmd->add_option("--drafter", opt->drafter, "DFlash drafter checkpoint directory");
  cmd->add_option("--step-record", opt->step_record, "A training step record (.safetensors)");
  cmd->add_option("--only", opt->only, "Checks to run, comma-separated (default: all)")
      ->delimiter(',');
  cmd->add_option("--param", opt->params, "CHECK.NAME=VALUE (JSON value), repeatable");
  cmd->add_option("--report", opt->report, "Write a JSON report");
  cmd->add_option("--junit", opt->junit, "Write a JUnit XML report");
  cmd->add_flag("--fail-on-skip", opt->fail_on_skip, "Treat skipped checks as failures");
  cmd->add_option(
      "--skip-exit-code", opt->skip_exit_code,
      "Exit with this code when every selected check skipped (ctest's SKIP_RETURN_CODE)");
  cmd->callback([opt, runner] { *runner = [opt] { return run_check_verb(*opt); }; });
}

}  // namespace draftgate::cli
