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
// Any shell command line, run the same way (stdin /dev/null, stdout and stderr captured).
CliResult run_command(const std::string& command);

struct MeasuredResult : CliResult {
  long peak_rss_kib = -1;  // of the draftgate process (and what it ran), not of the test
  double seconds = 0;      // wall time
};

// Like run_draftgate, measured by the peak_rss launcher, and killed after `limit_s` seconds (exit
// code 137 then). `prefix` goes before the binary (e.g. "setpriv --reuid=65534 ...").
MeasuredResult run_draftgate_measured(const std::string& args, const std::string& prefix = "",
                                      int limit_s = 60);

}  // namespace draftgate::testing
