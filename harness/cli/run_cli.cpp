#include "run_cli.h"

#include <algorithm>
#include <exception>
#include <iostream>
#include <new>
#include <thread>

#include "cli_options.h"
#include "draftgate/error.h"
#include "suggest.h"

namespace draftgate::cli {

int run_cli(int argc, char** argv, const std::vector<AddVerb>& verbs,
            const std::function<void(int)>& apply_threads) {
  CLI::App app{"draftgate: gates DFlash drafter training runs against a target checkpoint",
               "draftgate"};
  app.set_version_flag("--version", DRAFTGATE_VERSION);
  app.require_subcommand(1);
  VerbRunner runner;
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  int threads = cores;
  // More threads than 4x the cores only thrash (100000 hangs a 2-token forward).
  const int max_threads = std::min(1024, 4 * cores);
  app.add_option("--threads", threads,
                 "Intra-op threads (default: the machine's cores; at most 4x the cores, 1024)")
      ->check(integer_range(1, max_threads));
  // Every option's default in --help; global options (--threads) before or after the verb.
  app.option_defaults()->always_capture_default();
  app.fallthrough();
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
    std::cerr << "draftgate: usage error: " << one_line(e.what()) << suggestion(app, argc, argv)
              << " (run with --help)\n";
    return 2;
  }
  apply_threads(threads);
  try {
    return runner();
  } catch (const Error& e) {
    std::cerr << "draftgate: error: " << e.one_line() << "\n";
  } catch (const std::bad_alloc&) {
    std::cerr << "draftgate: error: out of memory (hint: a limit draftgate checks up front was "
                 "not enough; report the command)\n";
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    std::cerr << "draftgate: error: " << what << "\n";
  }
  return 2;
}

}  // namespace draftgate::cli
