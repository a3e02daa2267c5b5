// The draftgate front end. `probe`, `tokenize`, `prompts` and `check` runs whose checks are all
// structural (layer_path, the static fc_excludes_target_layer) run here, on the torch-free
// libraries, so inspecting even a 50 GB checkpoint costs a few MB of memory and no libtorch
// start-up; everything else (and --help) runs in the engine, libdraftgate_engine.so, which brings
// libtorch: beside this binary in the build tree, in the library directory of an installed prefix.

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <string>

#include "draftgate/keep_freed_memory.h"
#include "run_cli.h"

namespace {

// The first positional argument (global options and the value of --threads skipped).
std::string verb_of(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads") {
      ++i;
      continue;
    }
    if (a.empty() || a[0] != '-') return a;
  }
  return "";
}

// Beside the binary (build tree), else where `cmake --install` puts it relative to bin/.
std::filesystem::path engine_path() {
  std::error_code ec;
  const auto bin = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  const auto beside = bin / "libdraftgate_engine.so";
  if (std::filesystem::exists(beside, ec)) return beside;
  return (bin / DRAFTGATE_ENGINE_FROM_BIN / "libdraftgate_engine.so").lexically_normal();
}

int run_engine(int argc, char** argv) {
  // OpenBLAS's idle threads spin on sched_yield for up to 2^28 cycles after each GEMM (its default
  // thread timeout), taking the cores from ATen's OpenMP threads: most of the kernel time of a
  // streamed check run (docs/performance.md). 2^4 cycles puts them to sleep at once. OpenBLAS
  // reads the variable when the engine loads it; a value the user set is kept.
  ::setenv("OPENBLAS_THREAD_TIMEOUT", "4", /*overwrite=*/0);
  draftgate::keep_freed_memory();
  const std::string engine = engine_path().string();
  void* lib = ::dlopen(engine.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::cerr << "draftgate: error: " << engine << ": cannot load the engine: " << ::dlerror()
              << "\n";
    return 2;
  }
  using EngineMain = int (*)(int, char**);
  auto entry = reinterpret_cast<EngineMain>(::dlsym(lib, "draftgate_engine_main"));
  if (entry == nullptr) {
    std::cerr << "draftgate: error: " << engine << ": no draftgate_engine_main\n";
    return 2;
  }
  return entry(argc, argv);
}

// Help pages come from the engine, whose check registry is complete (check --help lists them).
bool wants_help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace draftgate::cli;
  const std::string verb = verb_of(argc, argv);
  if ((verb == "probe" || verb == "check" || verb == "tokenize" || verb == "prompts") &&
      !wants_help(argc, argv)) {
    try {
      return run_cli(
          argc, argv,
          {add_probe, add_tokenize, add_prompts,
           [](CLI::App& app, VerbRunner* runner) { add_check_verb(app, runner, nullptr); }},
          [](int) {});
    } catch (const NeedsEngine&) {
      // a check that runs models: the engine parses and runs the whole command again
    }
  }
  return run_engine(argc, argv);
}
