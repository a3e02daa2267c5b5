// Every place a new check must touch outside its own file (docs/development/adding-a-check.md),
// each compared with the checks the source tree declares (checks/NAME.cpp calling register_as<>):
// the registry, its test file tests/checks/NAME_test.cpp, docs/checks.md, the README, every bundled
// suite and the verdict matrix of docs/fixtures.md. The gate label and the CLI's lists are
// generated from the registry and compared in CheckCli.GateLabelCoversEveryCheck and CliHelp.* /
// CliFlags.*.

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "check_sources.h"
#include "checks/check.h"
#include "checks/suite.h"
#include "fixture_paths.h"
#include "test_files.h"

namespace draftgate::checks {
namespace {

using testing::kSourceDir;

namespace fs = std::filesystem;

std::vector<std::string> registered() {
  std::vector<std::string> names;
  for (const Check* c : all_checks()) names.push_back(c->name());
  return names;
}

TEST(CheckCatalogue, TheRegistryHoldsEveryCheckFileOfChecks) {
  const std::string cmake = testing::read_file(kSourceDir / "checks/CMakeLists.txt");
  for (const auto& name : testing::check_source_names())
    EXPECT_NE(cmake.find("  " + name + ".cpp\n"), std::string::npos)
        << "checks/" << name << ".cpp registers a check but checks/CMakeLists.txt does not list it "
        << "(draftgate_structural_checks if it needs no libtorch, else draftgate_checks)";
  EXPECT_EQ(testing::join(registered(), ", "), testing::join(testing::check_source_names(), ", "))
      << "the registry and the files checks/NAME.cpp that call register_as<> differ: a check's "
         "name is its file's name, one file each";
}

// A check's behaviour is specified in one place: tests/checks/NAME_test.cpp, built into unit_tests.
TEST(CheckCatalogue, EveryCheckHasItsOwnTestFile) {
  const std::string cmake = testing::read_file(kSourceDir / "tests/CMakeLists.txt");
  for (const auto& name : registered()) {
    const std::string file = "checks/" + name + "_test.cpp";
    EXPECT_TRUE(fs::exists(kSourceDir / "tests" / file))
        << name << ": tests/" << file << " is missing: specify the check there, both ways";
    EXPECT_NE(cmake.find("  " + file + "\n"), std::string::npos)
        << name << ": tests/CMakeLists.txt does not build tests/" << file << " into unit_tests";
  }
}

TEST(CheckCatalogue, DocsChecksMdHasARowPerCheck) {
  const std::string table = testing::read_file(kSourceDir / "docs/checks.md");
  ASSERT_FALSE(table.empty()) << "docs/checks.md is missing";
  for (const auto& name : registered())
    EXPECT_NE(table.find("\n| `" + name + "` |"), std::string::npos)
        << name << ": docs/checks.md's check table has no row \"| `" << name << "` | …\"";
}

TEST(CheckCatalogue, TheReadmeHasALinePerCheck) {
  const std::string readme = testing::read_file(kSourceDir / "README.md");
  for (const auto& name : registered())
    EXPECT_NE(readme.find("\n- `" + name + "` — "), std::string::npos)
        << name << ": README.md's \"The checks\" list has no line \"- `" << name << "` — …\"";
}

// A suite that does not run a check, or runs it without an expectation, would let
// --verify-expectations and FixtureGate pass whatever the check says on that fixture.
TEST(CheckCatalogue, EverySuiteExpectsAVerdictOfEveryCheck) {
  std::vector<fs::path> suites;
  for (const auto& e : fs::directory_iterator(kSourceDir / "fixtures/suites"))
    if (e.path().extension() == ".json") suites.push_back(e.path());
  ASSERT_FALSE(suites.empty());
  for (const auto& path : suites) {
    const Suite suite = read_suite(path);
    std::set<std::string> run;
    for (const CheckInstance& in : suite.checks) {
      run.insert(in.check->name());
      EXPECT_TRUE(suite.expect.count(in.name))
          << path.filename().string() << ": no \"expect\" entry for the instance \"" << in.name
          << "\": add the verdict it must give on this fixture";
    }
    for (const auto& name : registered())
      EXPECT_TRUE(run.count(name))
          << path.filename().string() << " does not run " << name
          << ": add it (or drop the suite's \"checks\" list) and its expected verdict";
  }
}

// The matrix `bash ci/run-gate.sh` prints, as docs/fixtures.md shows it: one column per check.
TEST(CheckCatalogue, TheFixtureVerdictMatrixHasAColumnPerCheck) {
  const std::string doc = testing::read_file(kSourceDir / "docs/fixtures.md");
  std::istringstream lines(doc);
  std::string header;
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("    ", 0) == 0 && line.find("layer_path") != std::string::npos) {
      header = line;
      break;
    }
  ASSERT_FALSE(header.empty()) << "docs/fixtures.md: no verdict matrix header found";
  std::istringstream words(header);
  std::vector<std::string> columns;
  for (std::string w; words >> w;) columns.push_back(w);
  EXPECT_EQ(testing::join(columns, " "), testing::join(registered(), " "))
      << "docs/fixtures.md: the verdict matrix's columns are not the checks; paste the matrix "
         "bash ci/run-gate.sh prints";
}

}  // namespace
}  // namespace draftgate::checks
