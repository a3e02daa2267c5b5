#pragma once
// The stand-in serving engine (engine_stand_in.py) as a test fixture: started on 127.0.0.1 on a
// port the OS chose, stopped (killed by its pid) when this goes out of scope; it also stops by
// itself after its lifetime.

#include <filesystem>
#include <string>

namespace draftgate::testing {

// The python3 the build found (DRAFTGATE_PYTHON3), or "" when there is none.
std::string stand_in_python();

class EngineStandIn {
 public:
  // `args`: the script's flags (--engine, --vintage, --fault, --served-log, --serve-dir, …);
  // `dir` holds its pid, port and log.
  EngineStandIn(const std::filesystem::path& dir, const std::string& args,
                double lifetime_seconds = 60);
  ~EngineStandIn();
  EngineStandIn(const EngineStandIn&) = delete;
  EngineStandIn& operator=(const EngineStandIn&) = delete;

  int port() const { return port_; }  // 0 when it did not start
  std::string url(const std::string& path = "") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

 private:
  std::filesystem::path dir_;
  int port_ = 0;
};

}  // namespace draftgate::testing
