#include "test_files.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

namespace draftgate::testing {
namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

fs::path fresh_dir(const std::string& name) {
  // One root per test process, removed when the process exits.
  struct Root {
    fs::path path = fs::temp_directory_path() / ("draftgate_test_" + std::to_string(::getpid()));
    ~Root() {
      std::error_code ignored;
      fs::remove_all(path, ignored);
    }
  };
  static const Root root;
  const fs::path dir = root.path / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace draftgate::testing
