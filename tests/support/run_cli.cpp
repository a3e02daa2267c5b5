#include "run_cli.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "test_files.h"

namespace draftgate::testing {

CliResult run_draftgate(const std::string& args) {
  static int counter = 0;
  const auto base =
      std::filesystem::temp_directory_path() /
      ("draftgate_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  const std::string out = base.string() + ".out", err = base.string() + ".err";
  const std::string cmd =
      std::string(DRAFTGATE_BINARY) + " " + args + " >" + out + " 2>" + err + " </dev/null";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(out);
  r.err = read_file(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

}  // namespace draftgate::testing
