#include "suggest.h"

#include <algorithm>
#include <vector>

#include "draftgate/edit_distance.h"

namespace draftgate::cli {
namespace {

// The closest of `names` to `word` within the distance a typo makes, or "".
std::string closest(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(1, word.size() / 3) + 1;
  for (const auto& name : names) {
    const std::size_t d = edit_distance(word, name);
    if (d < best_distance) best = name, best_distance = d;
  }
  return best;
}

std::vector<std::string> long_flags(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* a = &app; a != nullptr; a = a->get_parent())
    for (const CLI::Option* o : a->get_options())
      for (const auto& l : o->get_lnames()) names.push_back("--" + l);
  return names;
}

}  // namespace

std::string suggestion(const CLI::App& app, int argc, char** argv) {
  const CLI::App* verb = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) == 0) {
      const std::string flag = arg.substr(0, arg.find('='));
      const auto flags = long_flags(*verb);
      if (std::find(flags.begin(), flags.end(), flag) != flags.end()) continue;
      const std::string near = closest(flag, flags);
      return near.empty() ? "" : " (" + flag + ": did you mean " + near + "?)";
    }
    if (arg.empty() || arg[0] == '-') continue;
    const auto subcommands = verb->get_subcommands([](const CLI::App*) { return true; });
    if (subcommands.empty()) continue;  // a value or a positional argument
    std::vector<std::string> names;
    const CLI::App* next = nullptr;
    for (const CLI::App* s : subcommands) {
      names.push_back(s->get_name());
      if (s->get_name() == arg) next = s;
    }
    if (next != nullptr) {
      verb = next;
      continue;
    }
    // A value of the previous flag (`--threads 4`) is not a verb.
    if (i > 1 && std::string(argv[i - 1]).rfind("--", 0) == 0 &&
        std::string(argv[i - 1]).find('=') == std::string::npos)
      continue;
    const std::string near = closest(arg, names);
    return near.empty() ? "" : " (" + arg + ": did you mean " + near + "?)";
  }
  return "";
}

}  // namespace draftgate::cli
