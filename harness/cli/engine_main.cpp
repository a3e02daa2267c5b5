// The engine: every verb, with libtorch. The front end (main.cpp) loads this library for every
// run it cannot do itself (all but probe and structural-only checks).

#include "draftgate/engine_main.h"

#include <ATen/Parallel.h>

#include "checks/model_engine.h"
#include "draftgate/model/big_block_cache.h"
#include "run_cli.h"

int draftgate_engine_main(int argc, char** argv) {
  using namespace draftgate::cli;
  draftgate::model::cache_big_cpu_blocks();
  return run_cli(
      argc, argv,
      {add_probe, add_forward,
       [](CLI::App& app, VerbRunner* runner) {
         add_check_verb(app, runner, &draftgate::checks::model_engine());
       },
       add_eval, add_golden, add_tau, add_make_target, add_make_drafter, add_tokenize, add_prompts},
      [](int threads) { at::set_num_threads(threads); });
}
