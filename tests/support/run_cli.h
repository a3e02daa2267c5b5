#pragma once
// Runs the draftgate binary the way a user's shell or CI would and captures what it printed.

#include <string>

namespace draftgate::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// `args` is appended to the binary path verbatim (quote paths with spaces yourself).
CliResult run_draftgate(const std::string& args);

}  // namespace draftgate::testing
