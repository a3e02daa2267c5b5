#include "run_cli.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "test_files.h"

namespace draftgate::testing {

CliResult run_command(const std::string& command) {
  static int counter = 0;
  const auto base =
      std::filesystem::temp_directory_path() /
      ("draftgate_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  const std::string out = base.string() + ".out", err = base.string() + ".err";
  const std::string cmd = command + " >" + out + " 2>" + err + " </dev/null";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(out);
  r.err = read_file(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

CliResult run_draftgate(const std::string& args) {
  return run_command(std::string(DRAFTGATE_BINARY) + " " + args);
}

MeasuredResult run_draftgate_measured(const std::string& args, const std::string& prefix,
                                      int limit_s) {
  static int counter = 0;
  const std::string base =
      (std::filesystem::temp_directory_path() /
       ("draftgate_measured_" + std::to_string(::getpid()) + "_" + std::to_string(counter++)))
          .string();
  const std::string script = base + ".sh", report = base + ".rss", out = base + ".out",
                    err = base + ".err";
  std::ofstream(script) << "exec timeout -s KILL " << limit_s << " " << prefix << " "
                        << DRAFTGATE_BINARY << " " << args << "\n";
  const std::string cmd = std::string(DRAFTGATE_PEAK_RSS) + " " + report + " /bin/sh " + script +
                          " >" + out + " 2>" + err + " </dev/null";
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(cmd.c_str());
  MeasuredResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ifstream rss(report);
  if (!(rss >> r.exit_code >> r.peak_rss_kib)) r.exit_code = WIFEXITED(status) ? 1000 : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  for (const auto& f : {script, report, out, err}) std::filesystem::remove(f);
  return r;
}

}  // namespace draftgate::testing
