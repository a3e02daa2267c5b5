#include "check_sources.h"

#include <algorithm>
#include <filesystem>

#include "test_files.h"

namespace draftgate::testing {

std::vector<std::string> check_source_names() {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(fs::path(DRAFTGATE_SOURCE_DIR) / "checks"))
    if (entry.path().extension() == ".cpp" &&
        read_file(entry.path()).find("register_as<") != std::string::npos)
      names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string join(const std::vector<std::string>& names, const std::string& separator) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : separator) + n;
  return out;
}

}  // namespace draftgate::testing
