// The library split as folders (docs/development/architecture.md): a folder says which library its
// files belong to and whether they may include ATen. These tests read the source tree and the
// libraries' source lists, so a file put in the wrong folder, or a torch-free file that reaches
// ATen through any header, fails here and not at some later link.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const fs::path kRoot = DRAFTGATE_SOURCE_DIR;

// The folders of harness/src and harness/include/draftgate by what they may include.
const std::set<std::string> kTorchFreeFolders = {
    "io", "layout", "arch", "golden", "tau", "tokenizer", "template", "prompts", ""};
const std::set<std::string> kAtenFolders = {"model", "decode", "train"};

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The folder under harness/src or harness/include/draftgate a path lies in ("" for the top, "?"
// outside both).
std::string harness_folder(const fs::path& path) {
  for (const fs::path& base : {kRoot / "harness/src", kRoot / "harness/include/draftgate"}) {
    const fs::path rel = path.lexically_relative(base);
    if (rel.empty() || *rel.begin() == "..") continue;
    return std::distance(rel.begin(), rel.end()) == 1 ? "" : rel.begin()->string();
  }
  return "?";
}

// The sources of one add_library / add_executable call in a CMakeLists.txt, as paths.
std::vector<fs::path> sources_of(const fs::path& cmake_lists, const std::string& target) {
  const std::string text = read(cmake_lists);
  const std::regex call("add_(library|executable)\\(" + target + "[\\s\\n]([^)]*)\\)");
  std::smatch m;
  if (!std::regex_search(text, m, call)) return {};
  std::vector<fs::path> sources;
  std::istringstream words(m[2].str());
  for (std::string word; words >> word;) {
    if (word.find(".cpp") != std::string::npos) sources.push_back(cmake_lists.parent_path() / word);
  }
  return sources;
}

// The repository file a quoted include names, from the include folders the build uses
// (harness/include, the project root for "checks/…") or the including file's own folder.
fs::path resolve(const std::string& include, const fs::path& from) {
  for (const fs::path& dir : {kRoot / "harness/include", kRoot, from.parent_path()}) {
    if (fs::exists(dir / include)) return fs::weakly_canonical(dir / include);
  }
  return {};
}

// The headers of the checks compiled with libtorch (draftgate_checks): checks/NAME.h of each
// NAME.cpp.
const std::set<fs::path>& engine_check_headers() {
  static const std::set<fs::path> headers = [] {
    std::set<fs::path> found;
    for (auto source : sources_of(kRoot / "checks/CMakeLists.txt", "draftgate_checks")) {
      if (fs::exists(source.replace_extension(".h"))) found.insert(fs::weakly_canonical(source));
    }
    return found;
  }();
  return headers;
}

// Every place `source` reaches ATen, directly or through the repository's headers: "file: what".
std::vector<std::string> aten_reached(const fs::path& source) {
  static const std::regex system_include("#include\\s*<(ATen|torch|c10)/[^>]*>");
  static const std::regex quoted_include("#include\\s*\"([^\"]+)\"");
  std::vector<std::string> found;
  std::set<fs::path> seen;
  std::vector<fs::path> todo = {fs::weakly_canonical(source)};
  while (!todo.empty()) {
    const fs::path file = todo.back();
    todo.pop_back();
    if (!seen.insert(file).second) continue;
    const std::string rel = file.lexically_relative(kRoot).string();
    if (file.extension() == ".h" &&
        (kAtenFolders.count(harness_folder(file)) > 0 || engine_check_headers().count(file) > 0))
      found.push_back(rel + " (a header of the engine)");
    const std::string text = read(file);
    for (std::sregex_iterator it(text.begin(), text.end(), system_include), end; it != end; ++it)
      found.push_back(rel + " includes <" + (*it)[1].str() + "/…>");
    for (std::sregex_iterator it(text.begin(), text.end(), quoted_include), end; it != end; ++it) {
      const fs::path target = resolve((*it)[1].str(), file);
      if (!target.empty()) todo.push_back(target);
    }
  }
  return found;
}

TEST(IncludeRules, EveryHarnessFolderIsTorchFreeOrEngine) {
  for (const fs::path& base : {kRoot / "harness/src", kRoot / "harness/include/draftgate"}) {
    for (const auto& entry : fs::directory_iterator(base)) {
      if (!entry.is_directory()) continue;
      const std::string folder = entry.path().filename().string();
      EXPECT_TRUE(kTorchFreeFolders.count(folder) + kAtenFolders.count(folder) == 1)
          << entry.path() << " is neither a torch-free folder nor an engine folder: add it to one "
          << "list here and to the table in docs/development/architecture.md";
    }
  }
}

TEST(IncludeRules, TheStructureLibraryIsBuiltFromTorchFreeFoldersOnly) {
  const auto sources = sources_of(kRoot / "harness/CMakeLists.txt", "draftgate_structure");
  ASSERT_GT(sources.size(), 20u);
  for (const auto& source : sources) {
    EXPECT_EQ(kTorchFreeFolders.count(harness_folder(source)), 1u)
        << source << " is compiled into the torch-free draftgate_structure but lies in an engine "
        << "folder: move it to a torch-free folder";
  }
}

TEST(IncludeRules, TheEngineLibraryIsBuiltFromEngineFoldersOnly) {
  const auto sources = sources_of(kRoot / "harness/CMakeLists.txt", "draftgate_harness");
  ASSERT_GT(sources.size(), 10u);
  for (const auto& source : sources) {
    EXPECT_EQ(kAtenFolders.count(harness_folder(source)), 1u)
        << source << " is compiled into draftgate_harness (libtorch) but lies in a torch-free "
        << "folder: move it to model/, decode/ or train/, or into draftgate_structure";
  }
}

TEST(IncludeRules, TorchFreeFilesNeverReachAten) {
  std::vector<fs::path> torch_free;
  for (const fs::path& base : {kRoot / "harness/src", kRoot / "harness/include/draftgate"}) {
    for (const auto& entry : fs::recursive_directory_iterator(base)) {
      if (entry.is_regular_file() && kTorchFreeFolders.count(harness_folder(entry.path())) > 0)
        torch_free.push_back(entry.path());
    }
  }
  for (const auto& source :
       sources_of(kRoot / "checks/CMakeLists.txt", "draftgate_structural_checks"))
    torch_free.push_back(source);
  for (const auto& source : sources_of(kRoot / "harness/CMakeLists.txt", "draftgate"))
    torch_free.push_back(source);
  ASSERT_GT(torch_free.size(), 80u);
  for (const auto& file : torch_free) {
    const auto reached = aten_reached(file);
    EXPECT_TRUE(reached.empty()) << file.lexically_relative(kRoot).string()
                                 << " is torch-free but reaches ATen: " << reached.front();
  }
}

TEST(IncludeRules, TheCheckerSeesAnIncludeOfTheEngine) {
  // The rule must be able to fail: a torch-free file of the tree that includes an engine header.
  const fs::path probe = fs::temp_directory_path() / "draftgate_include_rules_probe.cpp";
  std::ofstream(probe) << "#include \"draftgate/model/target.h\"\n";
  const auto reached = aten_reached(probe);
  fs::remove(probe);
  ASSERT_FALSE(reached.empty());
  EXPECT_NE(reached.front().find("model/target.h"), std::string::npos) << reached.front();
}

}  // namespace
