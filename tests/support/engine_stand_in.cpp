#include "engine_stand_in.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "fixture_paths.h"

namespace draftgate::testing {

std::string stand_in_python() { return DRAFTGATE_PYTHON3; }

EngineStandIn::EngineStandIn(const std::filesystem::path& dir, const std::string& args,
                             double lifetime_seconds)
    : dir_(dir) {
  if (stand_in_python().empty()) return;
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir / "port");
  const std::string script = (kSourceDir / "tests/support/engine_stand_in.py").string();
  const std::string start = "cd '" + dir.string() + "' && (" + stand_in_python() + " " + script +
                            " --lifetime " + std::to_string(lifetime_seconds) + " " + args +
                            " > port 2> stand-in.log & echo $! > pid)";
  if (std::system(start.c_str()) != 0) return;
  for (int i = 0; i < 200 && port_ == 0; ++i) {  // the first line of its stdout, within 10 s
    std::string line;
    std::ifstream in(dir / "port");
    if (std::getline(in, line) && !in.eof()) port_ = std::atoi(line.c_str());
    if (port_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

EngineStandIn::~EngineStandIn() {
  std::string pid;
  std::ifstream(dir_ / "pid") >> pid;
  if (!pid.empty()) std::system(("kill " + pid + " 2>/dev/null").c_str());
}

}  // namespace draftgate::testing
