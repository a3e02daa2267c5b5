// draftgate command line: maps every outcome onto the exit-code contract
// 0 success, 1 a check failed, 2 bad input or usage — with one line on stderr for errors.

#include <ATen/Parallel.h>

#include <exception>
#include <iostream>
#include <thread>

#include "draftgate/error.h"
#include "verbs.h"

int main(int argc, char** argv) {
  CLI::App app{"draftgate: gates DFlash drafter training runs against a target checkpoint",
               "draftgate"};
  app.set_version_flag("--version", DRAFTGATE_VERSION);
  app.require_subcommand(1);
  draftgate::cli::VerbRunner runner;
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  app.add_option("--threads", threads, "Intra-op threads (default: the machine's cores)")
      ->check(CLI::PositiveNumber);
  draftgate::cli::add_probe(app, &runner);
  draftgate::cli::add_forward(app, &runner);
  draftgate::cli::add_check(app, &runner);
  draftgate::cli::add_eval(app, &runner);
  draftgate::cli::add_golden(app, &runner);
  draftgate::cli::add_make_target(app, &runner);
  draftgate::cli::add_make_drafter(app, &runner);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "draftgate: usage error: " << e.what() << " (run with --help)\n";
    return 2;
  }
  at::set_num_threads(threads);
  try {
    return runner();
  } catch (const draftgate::Error& e) {
    std::cerr << "draftgate: error: " << e.one_line() << "\n";
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    std::cerr << "draftgate: error: " << what << "\n";
  }
  return 2;
}
