#include "run_cli.h"

#include <exception>
#include <iostream>
#include <thread>

#include "draftgate/error.h"

namespace draftgate::cli {

int run_cli(int argc, char** argv, const std::vector<AddVerb>& verbs,
            const std::function<void(int)>& apply_threads) {
  CLI::App app{"draftgate: gates DFlash drafter training runs against a target checkpoint",
               "draftgate"};
  app.set_version_flag("--version", DRAFTGATE_VERSION);
  app.require_subcommand(1);
  VerbRunner runner;
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  app.add_option("--threads", threads, "Intra-op threads (default: the machine's cores)")
      ->check(CLI::PositiveNumber);
  for (AddVerb add : verbs) add(app, &runner);
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
  apply_threads(threads);
  try {
    return runner();
  } catch (const Error& e) {
    std::cerr << "draftgate: error: " << e.one_line() << "\n";
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    std::cerr << "draftgate: error: " << what << "\n";
  }
  return 2;
}

}  // namespace draftgate::cli
