// No data loss and determinism: draftgate never writes into a checkpoint, maps weights read-only,
// replaces goldens atomically (a run killed at any moment leaves the old file or the complete new
// one), and gives byte-identical reports across runs and thread counts.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "draftgate/golden/golden.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/model/tensor_view.h"
#include "fixture_paths.h"
#include "run_cli.h"
#include "synthetic_layouts.h"

extern char** environ;

namespace draftgate {
namespace {

using testing::kTrained;

using testing::run_draftgate;
namespace fs = std::filesystem;

// Every file below `dir` with its bytes and modification time.
std::map<std::string, std::pair<std::string, fs::file_time_type>> snapshot(const fs::path& dir) {
  std::map<std::string, std::pair<std::string, fs::file_time_type>> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    out[fs::relative(e.path(), dir).string()] = {
        e.is_regular_file() ? testing::read_file(e.path()) : "", fs::last_write_time(e.path())};
  return out;
}

TEST(NoDataLoss, NoCommandWritesIntoTheCheckpoints) {
  const fs::path dir = testing::fresh_dir("no_writes");
  for (const char* what : {"qwen35-target", "qwen35-drafter-reference"})
    fs::copy(kTrained / what, dir / what, fs::copy_options::recursive);
  const auto target_before = snapshot(dir / "qwen35-target");
  const auto drafter_before = snapshot(dir / "qwen35-drafter-reference");
  const std::string pair = " --target " + (dir / "qwen35-target").string() + " --drafter " +
                           (dir / "qwen35-drafter-reference").string();
  const std::string prompts = " --prompts " + (kTrained / "prompts/held-out.jsonl").string();
  const fs::path out = testing::fresh_dir("no_writes_out");
  for (const std::string& cmd :
       {"probe " + (dir / "qwen35-target").string() + " --json",
        "forward --model " + (dir / "qwen35-target").string() + " --tokens 1,2,3 --out " +
            (out / "dump.safetensors").string(),
        "eval" + pair + prompts + " --max-new 8 --json " + (out / "eval.json").string(),
        "golden record" + pair + prompts + " --max-new 8 --out " + (out / "g.json").string(),
        "check" + pair + " --step-record " +
            (kTrained / "step-records/qwen35-drafter-reference.safetensors").string() +
            " --golden " + (out / "g.json").string() + " --report " + (out / "r.json").string()}) {
    const auto r = run_draftgate(cmd);
    EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.err;
  }
  EXPECT_EQ(snapshot(dir / "qwen35-target"), target_before);
  EXPECT_EQ(snapshot(dir / "qwen35-drafter-reference"), drafter_before);
}

TEST(NoDataLoss, WeightsAreMappedReadOnly) {
  const io::Checkpoint ckpt = io::Checkpoint::open(kTrained / "qwen3-target");
  const at::Tensor t = io::load_tensor(ckpt, "model.norm.weight");
  ASSERT_GT(t.numel(), 0);
  std::ifstream maps("/proc/self/maps");
  int mappings = 0;
  for (std::string line; std::getline(maps, line);) {
    if (line.find("qwen3-target/model.safetensors") == std::string::npos) continue;
    ++mappings;
    std::istringstream fields(line);
    std::string range, perms;
    fields >> range >> perms;
    EXPECT_EQ(perms.substr(0, 2), "r-") << line;
  }
  EXPECT_GE(mappings, 1);
}

TEST(NoDataLoss, AKilledGoldenRecordLeavesTheOldFileOrTheNewOne) {
  const fs::path dir = testing::fresh_dir("killed_golden");
  const fs::path golden = dir / "g.json";
  const std::string args = " --target " + (kTrained / "qwen3-target").string() + " --drafter " +
                           (kTrained / "qwen3-drafter-reference").string() + " --prompts " +
                           (kTrained / "prompts/held-out.jsonl").string() + " --max-new 16 --eos 0";
  ASSERT_EQ(run_draftgate("golden record" + args + " --out " + golden.string()).exit_code, 0);
  const std::string old = testing::read_file(golden);
  std::vector<std::string> argv_s = {DRAFTGATE_BINARY, "golden", "record",
                                     "--force",        "--out",  golden.string()};
  std::istringstream rest(args);
  for (std::string a; rest >> a;) argv_s.push_back(a);
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  int replaced = 0;
  for (int delay_ms = 100; delay_ms <= 1450; delay_ms += 150) {
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    const std::string now = testing::read_file(golden);
    if (now != old) ++replaced;
    EXPECT_NO_THROW(golden::read_golden(golden)) << "killed after " << delay_ms << " ms";
  }
  RecordProperty("runs_that_finished_before_the_kill", replaced);
}

TEST(Determinism, ReportsAreByteIdenticalAcrossRunsAndThreadCounts) {
  const fs::path dir = testing::fresh_dir("determinism");
  const fs::path suites = fs::path(DRAFTGATE_SOURCE_DIR) / "fixtures/suites";
  std::vector<std::string> reports;
  for (const char* threads : {"1", "2", "2"}) {
    const fs::path report = dir / (std::string("r") + threads + ".json");
    run_draftgate(std::string("--threads ") + threads + " check --suite " +
                  (suites / "qwen35-final-layer-leak.json").string() + " --report " +
                  report.string());
    reports.push_back(testing::read_file(report));
    const fs::path eval = dir / (std::string("e") + threads + ".json");
    run_draftgate(std::string("--threads ") + threads + " eval --target " +
                  (kTrained / "qwen35-target").string() + " --drafter " +
                  (kTrained / "qwen35-drafter-reference").string() + " --prompts " +
                  (kTrained / "prompts/held-out.jsonl").string() + " --max-new 8 --json " +
                  eval.string());
    auto j = nlohmann::json::parse(testing::read_file(eval));
    j.erase("timing");
    for (auto& p : j["per_prompt"]) p.erase("seconds");
    reports.push_back(j.dump());
  }
  ASSERT_FALSE(reports[0].empty());
  EXPECT_EQ(reports[0], reports[2]) << "check report: 1 vs 2 threads";
  EXPECT_EQ(reports[2], reports[4]) << "check report: repeated run";
  EXPECT_EQ(reports[1], reports[3]) << "eval: 1 vs 2 threads";
  EXPECT_EQ(reports[3], reports[5]) << "eval: repeated run";
}

}  // namespace
}  // namespace draftgate
