// One line, always: every verb, every path flag, given a path that is missing, unreadable or of
// the wrong kind (a file where a checkpoint directory belongs, a directory where a file does),
// exits 2 with one stderr line naming that path — no std::filesystem text, no second line from
// another check, no blame on another artifact. Measured on main before: a wrong --target inside
// min_tau printed "filesystem error: directory iterator cannot open directory" under the
// drafter's name, and a wrong --target given to `check` printed a line per check that read it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "fixture_paths.h"
#include "run_cli.h"
#include "test_files.h"

namespace draftgate {
namespace {

using testing::kSourceDir;
using testing::kTrained;

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

// The command with "{P}" where the path under test goes and "{OUT}" for the case's directory.
struct PathFlag {
  std::string label;
  std::string command;
  bool directory;  // the flag takes a checkpoint directory (else a file)
};

std::string fill(std::string s) {
  const std::map<std::string, fs::path> paths = {
      {"{T}", kTrained / "qwen3-target"},
      {"{D}", kTrained / "qwen3-drafter-reference"},
      {"{R}", kTrained / "step-records/qwen3-drafter-reference.safetensors"},
      {"{G}", kSourceDir / "golden/qwen3-reference.json"},
      {"{PR}", kTrained / "prompts/held-out.jsonl"},
      {"{V}", kSourceDir / "tests/fuzz/seeds/vllm_metrics/two-engines.txt"}};
  for (const auto& [key, path] : paths)
    for (auto at = s.find(key); at != std::string::npos; at = s.find(key))
      s.replace(at, key.size(), path.string());
  return s;
}

const std::vector<PathFlag> kPathFlags = {
    {"probe", "probe {P}", true},
    {"forward_model", "forward --model {P} --tokens 1,2 --out {OUT}/f.safetensors", true},
    {"eval_target", "eval --target {P} --drafter {D} --prompts {PR} --max-new 2 --eos 0", true},
    {"eval_drafter", "eval --target {T} --drafter {P} --prompts {PR} --max-new 2 --eos 0", true},
    {"eval_prompts", "eval --target {T} --drafter {D} --prompts {P} --max-new 2 --eos 0", false},
    {"golden_target", "golden record --target {P} --drafter {D} --prompts {PR} --out {OUT}/g.json",
     true},
    {"golden_drafter", "golden record --target {T} --drafter {P} --prompts {PR} --out {OUT}/g.json",
     true},
    {"golden_prompts", "golden record --target {T} --drafter {D} --prompts {P} --out {OUT}/g.json",
     false},
    {"golden_measured", "golden record --measured {P} --out {OUT}/g.json", false},
    {"check_target", "check --target {P} --drafter {D}", true},
    {"check_drafter", "check --target {T} --drafter {P}", true},
    {"check_step_record", "check --target {T} --drafter {D} --step-record {P}", false},
    {"check_golden", "check --target {T} --drafter {D} --golden {P}", false},
    {"check_golden_min_tau", "check --only min_tau --target {P} --drafter {D} --golden {G}", true},
    {"check_reference_dump", "check --target {T} --reference-dump {P}", false},
    {"check_measured", "check --golden {G} --measured {P}", false},
    {"check_suite", "check --suite {P}", false},
    {"tau_vllm_metrics", "tau import --vllm-metrics {P} --out {OUT}/m.json", false},
    {"tau_before", "tau import --vllm-metrics {V} --before {P} --out {OUT}/m.json", false},
    {"tau_sglang", "tau import --sglang-requests {P} --prompts {PR} --out {OUT}/m.json", false},
    {"tau_vllm_responses", "tau import --vllm-responses {P} --prompts {PR} --out {OUT}/m.json",
     false},
    {"tau_prompts", "tau import --vllm-metrics {V} --prompts {P} --out {OUT}/m.json", false},
    {"tau_measure_prompts",
     "tau measure --engine sglang --url http://127.0.0.1:1 --prompts {P} --out {OUT}/m.json",
     false},
    {"make_drafter_target", "make-drafter --target {P} --taps 0,2 --out {OUT}/d", true},
    {"prompts_from", "prompts build --dataset gsm8k --from {P} --out {OUT}/p.jsonl", false},
};

enum class Fault { kMissing, kUnreadable, kWrongKind };

struct Case {
  PathFlag flag;
  Fault fault;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.flag.label; }

class PathFlags : public ::testing::TestWithParam<Case> {};

TEST_P(PathFlags, AreOneLineNamingThePath) {
  const Case& c = GetParam();
  const fs::path dir = testing::fresh_dir("path_flags_" + c.flag.label);
  fs::permissions(dir, fs::perms::all);  // "nobody" writes its outputs here
  fs::path path = dir / "missing";
  std::string prefix;
  if (c.fault == Fault::kUnreadable) {
    path = dir / "unreadable";
    if (c.flag.directory)
      fs::create_directory(path);
    else
      testing::write_file(path, "{}\n");
    fs::permissions(path, fs::perms::none);
    prefix = "setpriv --reuid=65534 --regid=65534 --clear-groups";  // root reads mode 000
  } else if (c.fault == Fault::kWrongKind) {
    path = dir / "wrong-kind";
    if (c.flag.directory)
      testing::write_file(path, "not a checkpoint\n");
    else
      fs::create_directory(path);
  }
  std::string command = fill(c.flag.command);
  command.replace(command.find("{P}"), 3, path.string());
  for (auto at = command.find("{OUT}"); at != std::string::npos; at = command.find("{OUT}"))
    command.replace(at, 5, dir.string());
  const auto r = testing::run_draftgate_measured(command, prefix, 120);
  EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.out << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << command << "\n" << r.err;
  EXPECT_THAT(r.err, HasSubstr("draftgate: error: " + path.string())) << command;
  for (const char* raw : {"filesystem error", "what()", "terminate", "std::", "c10::"})
    EXPECT_THAT(r.err, Not(HasSubstr(raw))) << command;
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const auto& flag : kPathFlags)
    for (const auto& [fault, suffix] : {std::pair{Fault::kMissing, "_missing"},
                                        {Fault::kUnreadable, "_unreadable"},
                                        {Fault::kWrongKind, "_wrong_kind"}}) {
      PathFlag f = flag;
      f.label += suffix;
      cases.push_back({f, fault});
    }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(EveryVerb, PathFlags, ::testing::ValuesIn(all_cases()),
                         [](const auto& p) { return p.param.flag.label; });

// Every path flag of every verb, outputs included, with "{P}" where the flag's value goes.
const std::vector<std::pair<std::string, std::string>> kEveryPathFlag = {
    {"checkpoint", "probe {P}"},
    {"--model", "forward --model {P} --tokens 1,2 --out {OUT}/f.safetensors"},
    {"--out", "forward --model {T} --tokens 1,2 --out {P}"},
    {"--target", "eval --target {P} --drafter {D} --prompts {PR}"},
    {"--drafter", "eval --target {T} --drafter {P} --prompts {PR}"},
    {"--prompts", "eval --target {T} --drafter {D} --prompts {P}"},
    {"--json", "eval --target {T} --drafter {D} --prompts {PR} --json {P}"},
    {"--html", "eval --target {T} --drafter {D} --prompts {PR} --html {P}"},
    {"--metrics-out", "eval --target {T} --drafter {D} --prompts {PR} --metrics-out {P}"},
    {"--target", "golden record --target {P} --drafter {D} --prompts {PR} --out {OUT}/g.json"},
    {"--drafter", "golden record --target {T} --drafter {P} --prompts {PR} --out {OUT}/g.json"},
    {"--prompts", "golden record --target {T} --drafter {D} --prompts {P} --out {OUT}/g.json"},
    {"--measured", "golden record --measured {P} --out {OUT}/g.json"},
    {"--out", "golden record --target {T} --drafter {D} --prompts {PR} --out {P}"},
    {"--suite", "check --suite {P}"},
    {"--target", "check --target {P} --drafter {D}"},
    {"--drafter", "check --target {T} --drafter {P}"},
    {"--step-record", "check --target {T} --drafter {D} --step-record {P}"},
    {"--golden", "check --target {T} --drafter {D} --golden {P}"},
    {"--reference-dump", "check --target {T} --reference-dump {P}"},
    {"--measured", "check --golden {G} --measured {P}"},
    {"--report", "check --target {T} --drafter {D} --only layer_path --report {P}"},
    {"--junit", "check --target {T} --drafter {D} --only layer_path --junit {P}"},
    {"--html", "check --target {T} --drafter {D} --only layer_path --html {P}"},
    {"--vllm-metrics", "tau import --vllm-metrics {P} --out {OUT}/m.json"},
    {"--before", "tau import --vllm-metrics {V} --before {P} --out {OUT}/m.json"},
    {"--sglang-requests", "tau import --sglang-requests {P} --prompts {PR} --out {OUT}/m.json"},
    {"--vllm-responses", "tau import --vllm-responses {P} --prompts {PR} --out {OUT}/m.json"},
    {"--prompts", "tau import --vllm-metrics {V} --prompts {P} --out {OUT}/m.json"},
    {"--out", "tau import --vllm-metrics {V} --out {P}"},
    {"--prompts",
     "tau measure --engine vllm --url http://127.0.0.1:1 --prompts {P} --out {OUT}/m.json"},
    {"--out", "tau measure --engine vllm --url http://127.0.0.1:1 --prompts {PR} --out {P}"},
    {"--save-dir",
     "tau measure --engine vllm --url http://127.0.0.1:1 --prompts {PR} --out {OUT}/m.json "
     "--save-dir {P}"},
    {"--out", "make-target --out {P}"},
    {"--target", "make-drafter --target {P} --out {OUT}/d"},
    {"--out", "make-drafter --target {T} --out {P}"},
    {"--tokenizer", "tokenize --tokenizer {P} --text hi"},
    {"--text-file", "tokenize --tokenizer {T} --text-file {P}"},
    {"--from", "prompts build --dataset gsm8k --from {P} --out {OUT}/p.jsonl"},
    {"--out", "prompts build --dataset gsm8k --from {PR} --out {P}"},
};

std::string with(std::string command, const std::string& p, const fs::path& out) {
  command = fill(command);
  command.replace(command.find("{P}"), 3, p);
  for (auto at = command.find("{OUT}"); at != std::string::npos; at = command.find("{OUT}"))
    command.replace(at, 5, out.string());
  return command;
}

// Measured on main before: `check --golden ""` ran without the golden (exit 0), so an unset CI
// variable turned min_tau off unnoticed; eval, probe and --suite said "no such directory" without
// naming the flag.
TEST(EmptyPaths, EveryPathFlagOfEveryVerbRefusesAnEmptyValueNamingTheFlag) {
  const fs::path dir = testing::fresh_dir("path_flags_empty");
  for (const auto& [flag, command] : kEveryPathFlag) {
    const auto r = testing::run_draftgate(with(command, "''", dir));
    EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.out << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << command << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(flag + ": is an empty path (an unset variable?)")) << command;
    EXPECT_EQ(r.out, "") << command;
  }
  EXPECT_TRUE(fs::is_empty(dir));  // nothing was written
}

// One rule for every output flag: its folder must exist; the refusal comes before any work and
// creates nothing. Measured on main before: forward, check, eval and tau import ran, then failed
// with "cannot create a temporary file: No such file or directory"; make-target and make-drafter
// created the missing folders.
TEST(OutputFolders, EveryOutputFlagRefusesAMissingFolderByNameBeforeAnyWork) {
  const fs::path dir = testing::fresh_dir("path_flags_folder");
  const fs::path folder = dir / "no-such-folder";
  const fs::path out = folder / "out";
  for (const auto& [flag, command] : kEveryPathFlag) {
    const bool output = flag == "--out" || flag == "--json" || flag == "--html" ||
                        flag == "--metrics-out" || flag == "--report" || flag == "--junit";
    if (!output) continue;
    const auto r = testing::run_draftgate(with(command, out.string(), dir));
    EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.out << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << command << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr("draftgate: error: " + flag + " " + out.string() +
                                 ": the folder " + folder.string() + " does not exist"))
        << command;
    EXPECT_EQ(r.out, "") << command;
    EXPECT_FALSE(fs::exists(folder)) << command;
  }
  // A folder that is a file is named as one.
  testing::write_file(folder, "a file\n");
  const auto r = testing::run_draftgate(with("make-target --out {P}", out.string(), dir));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr(folder.string() + " is a regular file, not a folder"));
}

// Two bad inputs in one command are still one line, naming one of them, for every verb: the first
// refusal ends the run before anything else is read or printed.
TEST(TwoBadInputs, EveryVerbSaysOneLineNamingOneOfThem) {
  const fs::path dir = testing::fresh_dir("path_flags_two_bad");
  const std::string a = (dir / "missing-a").string(), b = (dir / "missing-b").string();
  const fs::path bad_a = dir / "bad-a.json", bad_b = dir / "bad-b.json";
  testing::write_file(bad_a, "{\"schema\": \"draftgate.suite/1\", \"checks\": []}\n");
  testing::write_file(bad_b, "not json\n");
  const std::vector<std::string> commands = {
      "check --suite " + a + " --suite " + b,
      "check --suite " + bad_a.string() + " --suite " + bad_b.string(),
      "check --target " + a + " --drafter " + b,
      "check --target {T} --drafter {D} --step-record " + a + " --golden " + b,
      "eval --target " + a + " --drafter " + b + " --prompts {PR}",
      "eval --target {T} --drafter " + a + " --prompts " + b,
      "golden record --target " + a + " --drafter " + b + " --prompts {PR} --out {OUT}/g.json",
      "tau import --vllm-metrics " + a + " --before " + b + " --out {OUT}/m.json",
      "tau import --sglang-requests " + a + " --prompts " + b + " --out {OUT}/m.json",
      "tau measure --engine vllm --url http://127.0.0.1:1 --prompts " + a + " --out " + b +
          "/m.json",
      "tokenize --tokenizer " + a + " --text-file " + b,
      "prompts build --dataset gsm8k --from " + a + " --out " + b + "/p.jsonl",
      "forward --model " + a + " --tokens 1,2 --out " + b + "/f.safetensors",
  };
  for (const auto& c : commands) {
    std::string command = fill(c);
    for (auto at = command.find("{OUT}"); at != std::string::npos; at = command.find("{OUT}"))
      command.replace(at, 5, dir.string());
    const auto r = testing::run_draftgate(command);
    EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.out << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << command << "\n" << r.err;
    const bool names_one = r.err.find(a) != std::string::npos ||
                           r.err.find(b) != std::string::npos ||
                           r.err.find(bad_a.string()) != std::string::npos ||
                           r.err.find(bad_b.string()) != std::string::npos;
    EXPECT_TRUE(names_one) << command << "\n" << r.err;
  }
}

}  // namespace
}  // namespace draftgate
