// `draftgate check`: runs the gate's checks over the given artifacts (flags, or suite files); a
// table on stdout (and a verdict matrix for several suites), JSON and JUnit reports, exit 0 all
// pass, 1 a check failed, 2 bad input. --verify-expectations instead exits 0 iff every verdict is
// the one its suite expects (how the bundled fixtures prove each check both ways). The front end
// runs it when every selected check is structural; otherwise the engine does.

#include <algorithm>
#include <functional>
#include <iostream>

#include "checks/check.h"
#include "checks/drafter_provenance.h"
#include "checks/forward_plan.h"
#include "checks/html_report.h"
#include "checks/record_provenance.h"
#include "checks/report.h"
#include "checks/suite.h"
#include "cli_options.h"
#include "draftgate/error.h"
#include "draftgate/golden/golden.h"
#include "draftgate/golden/record_identity.h"
#include "draftgate/io/artifact_kind.h"
#include "draftgate/io/atomic_file.h"
#include "draftgate/io/json_util.h"
#include "draftgate/io/output_file.h"
#include "prompt_options.h"
#include "verbs.h"

namespace draftgate::cli {
namespace {

struct CheckOptions {
  std::vector<std::string> suites;
  std::string target, drafter, step_record, golden, reference_dump, measured;
  decode::PromptOptions prompt_options;  // how the golden's text and messages prompts are rendered
  std::vector<std::string> only;
  std::vector<std::string> params;  // check.param=json
  std::string report, junit, html;
  bool fail_on_skip = false;
  bool verify_expectations = false;
  int skip_exit_code = 0;
  bool list = false;
  bool json = false;
};

// --param CHECK.NAME=VALUE (NAME may be dotted into a nested budget), validated against the
// check's declared parameters: {check: {dotted name: value}}.
std::map<std::string, nlohmann::json> parse_params(const std::vector<std::string>& specs) {
  std::map<std::string, nlohmann::json> params;
  for (const auto& p : specs) {
    const auto dot = p.find('.'), eq = p.find('=');
    if (dot == std::string::npos || eq == std::string::npos || eq < dot)
      throw Error("--param", "\"" + p.substr(0, 80) + "\" is not CHECK.NAME=VALUE");
    const std::string text = p.substr(eq + 1);
    nlohmann::json value;
    try {
      value = io::parse_json_strict(text, "--param");
    } catch (const Error&) {
      value = text;  // a bare word is a string
    }
    const std::string check = p.substr(0, dot);
    const checks::Check* c = checks::find_check(check);
    if (c == nullptr)
      throw Error("--param", "unknown check \"" + check + "\"",
                  "the checks: " + checks::check_names());
    const nlohmann::json flat =
        checks::validated_overrides(*c, {{p.substr(dot + 1, eq - dot - 1), value}}, "--param");
    params[check].update(flat);
  }
  return params;
}

// Every value split at its commas, empty names kept (select() refuses them by name).
std::vector<std::string> comma_separated(const std::vector<std::string>& values) {
  std::vector<std::string> names;
  for (const auto& value : values) {
    std::size_t from = 0;
    for (auto comma = value.find(','); comma != std::string::npos; comma = value.find(',', from)) {
      names.push_back(value.substr(from, comma - from));
      from = comma + 1;
    }
    names.push_back(value.substr(from));
  }
  return names;
}

// Applies the command-line selection and parameters to a suite's instances.
std::vector<checks::CheckInstance> select(std::vector<checks::CheckInstance> instances,
                                          const CheckOptions& opt,
                                          const std::map<std::string, nlohmann::json>& params) {
  if (!opt.only.empty()) {
    std::string asked, would_run;
    for (std::size_t i = 0; i < opt.only.size(); ++i) asked += (i ? "," : "") + opt.only[i];
    for (std::size_t i = 0; i < instances.size(); ++i)
      would_run += (i ? ", " : "") + instances[i].name;
    for (const auto& name : opt.only)
      if (name.empty())
        throw Error("--only", "\"" + asked + "\" holds an empty check name",
                    "the checks: " + checks::check_names());
      else if (checks::find_check(name) == nullptr &&
               std::none_of(instances.begin(), instances.end(),
                            [&](const auto& in) { return in.name == name; }))
        throw Error("--only", "unknown check \"" + name + "\"",
                    "the checks: " + checks::check_names());
    instances.erase(std::remove_if(instances.begin(), instances.end(),
                                   [&](const auto& in) {
                                     return std::find(opt.only.begin(), opt.only.end(), in.name) ==
                                                opt.only.end() &&
                                            std::find(opt.only.begin(), opt.only.end(),
                                                      in.check->name()) == opt.only.end();
                                   }),
                    instances.end());
    if (instances.empty())
      throw Error("--only",
                  "\"" + asked + "\" selects none of the checks this run would run (" +
                      (would_run.empty() ? std::string("none") : would_run) + ")",
                  "run draftgate check --list for the check names");
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
std::vector<PlannedSuite> plan(const CheckOptions& opt, const checks::Engine* engine) {
  const auto params = parse_params(opt.params);
  std::vector<checks::Suite> suites;
  for (const auto& path : opt.suites) {
    io::require_slot(path, io::ArtifactKind::kSuite, "--suite");
    suites.push_back(checks::read_suite(path));
  }
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
    artifacts.engine = engine;
    artifacts.prompt_options = opt.prompt_options;
    auto instances = select(suite.checks, opt, params);
    std::vector<const checks::Check*> selected;
    for (const auto& in : instances) selected.push_back(in.check);
    checks::plan_target_forwards(artifacts, selected);  // before the record probe's walk
    checks::refuse_foreign_record(artifacts, selected);
    checks::recorded_target_note(artifacts);  // refuses a drafter made for another target
    // Every instance's parameters (the golden's check_params included) are valid before any
    // check runs.
    for (const auto& in : instances)
      checks::resolve_params(*in.check, artifacts, in.params,
                             opt.params.empty() ? suite.path : "--param");
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
    planned = plan(opt, nullptr);
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

// The output policy: reports never replace what the run reads.
void check_report_paths(const CheckOptions& opt, const std::vector<PlannedSuite>& planned) {
  std::vector<io::RunPath> inputs;
  for (const auto& s : opt.suites) inputs.push_back({s, "--suite"});
  for (const auto& in : prompt_option_inputs(opt.prompt_options)) inputs.push_back(in);
  for (const auto& p : planned) {
    const checks::ArtifactPaths& a = p.suite.artifacts;
    for (const auto& [path, flag, dir] : {std::tuple{a.target, "--target", true},
                                          {a.drafter, "--drafter", true},
                                          {a.step_record, "--step-record", false},
                                          {a.golden, "--golden", false},
                                          {a.reference_dump, "--reference-dump", false},
                                          {a.measured, "--measured", false}})
      if (path) inputs.push_back({*path, flag, dir});
    if (p.artifacts.golden)
      inputs.push_back({p.artifacts.golden->prompt_set, "the golden's prompt set"});
  }
  io::check_outputs({{opt.report, "--report"}, {opt.junit, "--junit"}, {opt.html, "--html"}},
                    inputs);
}

// The artifacts a suite judged with their identities, for the HTML report's header. An identity
// that cannot be computed says why; the checks that read the artifact report the error itself.
// A suite whose checks read configs and headers only takes no weights fingerprint (sampled bytes
// of every shard: 146 MB of a 235B target's 119 files).
nlohmann::json artifacts_json(const PlannedSuite& p) {
  const bool weights_read = std::any_of(
      p.instances.begin(), p.instances.end(),
      [&](const checks::CheckInstance& in) { return in.check->reads_weight_values(p.artifacts); });
  const checks::ArtifactPaths& paths = p.suite.artifacts;
  nlohmann::json out = nlohmann::json::object();
  const auto identity = [](const std::function<nlohmann::json()>& compute) -> nlohmann::json {
    try {
      return compute();
    } catch (const Error& e) {
      return "unreadable: " + e.one_line();
    }
  };
  for (const auto& [role, path] : {std::pair{"target", paths.target}, {"drafter", paths.drafter}})
    if (path) {
      const std::filesystem::path dir = *path;
      out[role] = {{"path", dir.string()},
                   {"identity", identity([&dir, weights_read] {
                      if (weights_read) return golden::target_identity(dir);
                      return nlohmann::json{
                          {"config_sha256", golden::config_sha256(dir)},
                          {"weights_fingerprint", "not taken: no check of this run reads weights"}};
                    })}};
    }
  if (paths.step_record)
    out["step_record"] = {{"path", paths.step_record->string()},
                          {"identity", identity([&] {
                             const auto id = golden::read_record_identity(*paths.step_record);
                             return nlohmann::json{{"target", id.target}, {"drafter", id.drafter}};
                           })}};
  if (p.artifacts.golden) {
    const golden::Golden& g = *p.artifacts.golden;
    out["golden"] = {{"path", g.path}, {"identity", {{"target", g.target_identity}}}};
    if (!g.measured)
      out["prompt_set"] = {{"path", g.prompt_set.string()},
                           {"identity", {{"sha256", g.prompt_set_sha256}}}};
  }
  for (const auto& [role, path] :
       {std::pair{"reference_dump", paths.reference_dump}, {"measured", paths.measured}})
    if (path) out[role] = {{"path", path->string()}};
  return out;
}

int run_check_verb(const CheckOptions& opt, const checks::Engine* engine) {
  const bool front_end = engine == nullptr;
  if (opt.list) {
    if (front_end) throw NeedsEngine{};  // the front end knows the structural checks only
    std::cout << (opt.json ? io::dump_json(checks::describe_checks_json()) + "\n"
                           : checks::describe_checks_text());
    return 0;
  }
  if (opt.json) throw Error("--json", "goes with --list (reports: --report FILE.json)");
  const std::vector<PlannedSuite> planned = front_end ? plan_in_front_end(opt) : plan(opt, engine);
  check_report_paths(opt, planned);
  std::vector<std::string> refusals;  // the checks' bad-input messages, each once, in order
  std::vector<checks::SuiteRun> runs;
  bool nothing_ran = true;
  for (const auto& p : planned) {
    checks::SuiteRun run{p.suite.name, {}, p.suite.expect};
    if (!opt.html.empty()) run.artifacts = artifacts_json(p);
    run.results = checks::run_instances(p.instances, p.artifacts);
    nothing_ran =
        nothing_ran && std::all_of(run.results.begin(), run.results.end(),
                                   [](const auto& r) { return r.status == checks::Status::kSkip; });
    if (opt.fail_on_skip) checks::fail_skips(run.results);
    if (planned.size() > 1) std::cout << "== " << p.suite.name << " (" << p.suite.path << ")\n";
    std::cout << checks::text_table(run.results) << "summary: " << checks::summary_line(run.results)
              << "\n";
    for (const auto& r : run.results)
      if (r.status == checks::Status::kError && !run.expect.count(r.check) &&
          std::find(refusals.begin(), refusals.end(), r.message) == refusals.end())
        refusals.push_back(r.message);
    runs.push_back(std::move(run));
  }
  // One line on stderr however many checks refused their input (each one's is in the table).
  if (!refusals.empty())
    std::cerr << "draftgate: error: " << refusals.front()
              << (refusals.size() > 1 ? " (and " + std::to_string(refusals.size() - 1) +
                                            " more refusal(s) in the table above)"
                                      : std::string())
              << "\n";
  if (runs.size() > 1)
    std::cout << "\nverdicts\n"
              << checks::verdict_matrix(runs)
              << "summary: " << checks::summary_line(checks::all_results(runs)) << "\n";
  // A run in which no check could run proves nothing: a usage error, unless the caller asked for
  // an exit code of its own for it (ctest's SKIP_RETURN_CODE) or checks expected verdicts.
  if (nothing_ran && opt.skip_exit_code == 0 && !opt.verify_expectations)
    throw Error("check",
                "no check could run: every selected check skipped (the SKIP lines say why)",
                "pass the artifacts they need (--target DIR, --drafter DIR, --step-record FILE, "
                "--golden FILE, or --suite FILE); draftgate check --list says what each needs");

  if (!opt.report.empty()) {
    const nlohmann::json report = runs.size() == 1 && opt.suites.empty()
                                      ? checks::json_report(runs[0].results)
                                      : checks::json_report(runs);
    io::write_text_atomically(opt.report, io::dump_json(report) + "\n");
  }
  if (!opt.junit.empty()) io::write_text_atomically(opt.junit, checks::junit_report(runs));
  if (!opt.html.empty()) io::write_text_atomically(opt.html, checks::html_check_report(runs));

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
  if (nothing_ran && opt.skip_exit_code != 0) return opt.skip_exit_code;
  return checks::exit_code(checks::all_results(runs), opt.fail_on_skip);
}

}  // namespace

void add_check_verb(CLI::App& app, VerbRunner* runner, const checks::Engine* engine) {
  auto opt = std::make_shared<CheckOptions>();
  CLI::App* cmd =
      app.add_subcommand("check", "Run the gate's checks on a target, drafter and step record");
  cmd->add_option("--suite", opt->suites,
                  "Suite file(s): artifacts and check instances (JSON); flags override paths")
      ->check(path_value());
  cmd->add_option("--target", opt->target,
                  "Target checkpoint directory (metadata-only is enough for layer_path)")
      ->check(path_value());
  cmd->add_option("--drafter", opt->drafter, "DFlash drafter checkpoint directory")
      ->check(path_value());
  cmd->add_option("--step-record", opt->step_record, "A training step record (.safetensors)")
      ->check(path_value());
  cmd->add_option("--golden", opt->golden, "Golden baseline of the reference drafter (JSON)")
      ->check(path_value());
  add_prompt_options(cmd, opt->prompt_options);
  cmd->add_option("--reference-dump", opt->reference_dump,
                  "Hidden states dumped elsewhere (draftgate forward format) for parity")
      ->check(path_value());
  cmd->add_option("--measured", opt->measured,
                  "Measured τ from a serving engine (draftgate tau import): min_tau compares it "
                  "with a measured golden instead of decoding")
      ->check(path_value());
  // One value per --only, split at commas after parsing: with CLI11's own delimiter "--only ,"
  // split into nothing and took the next flag as a check name.
  cmd->add_option("--only", opt->only, "Checks to run, comma-separated (default: all)")
      ->expected(1)
      ->take_all();
  cmd->add_option("--param", opt->params, "CHECK.NAME=VALUE (JSON value), repeatable");
  cmd->add_option("--report", opt->report, "Write a JSON report")->check(path_value());
  cmd->add_option("--junit", opt->junit, "Write a JUnit XML report")->check(path_value());
  cmd->add_option("--html", opt->html,
                  "Write a self-contained HTML report: verdicts, measurements against thresholds, "
                  "charts")
      ->check(path_value());
  cmd->add_flag("--fail-on-skip", opt->fail_on_skip,
                "Report a skipped check as a failure (table, JSON, JUnit, exit 1)");
  cmd->add_flag("--verify-expectations", opt->verify_expectations,
                "Exit 0 iff every verdict equals its suite's \"expect\"");
  cmd->add_option("--skip-exit-code", opt->skip_exit_code,
                  "Exit with this code when every selected check skipped (ctest's "
                  "SKIP_RETURN_CODE; without it such a run is a usage error, exit 2)");
  cmd->add_flag("--list", opt->list,
                "Print every check: summary, what it needs, its parameters (types, ranges)");
  cmd->add_flag("--json", opt->json, "With --list: print it as JSON");
  // The checks are listed from the registry when the page is printed (the engine prints --help).
  cmd->footer([] {
    return "\nChecks (draftgate check --list for what each needs and its parameters):\n  " +
           checks::check_names() +
           "\n\nExample:\n  draftgate check --target /models/Qwen3.6-27B --drafter runs/step-2000 "
           "--step-record runs/records/step-000010.safetensors --golden golden/qwen36.json "
           "--junit gate.xml --fail-on-skip\n";
  });
  cmd->callback([opt, runner, engine] {
    opt->only = comma_separated(opt->only);
    *runner = [opt, engine] { return run_check_verb(*opt, engine); };
  });
}

}  // namespace draftgate::cli
