#pragma once
// The checks as the source tree declares them, independently of any registry: every
// `checks/NAME.cpp` that registers a check (`register_as<`). A check's name is its file's name
// ("one file each"), so the tests that compare a list of checks (the registry, --list, --help, the
// gate label, the docs, the suites) compare it with this.

#include <string>
#include <vector>

namespace draftgate::testing {

// The NAMEs of checks/NAME.cpp that call register_as<>, sorted.
std::vector<std::string> check_source_names();

// `names` joined with `separator`.
std::string join(const std::vector<std::string>& names, const std::string& separator);

}  // namespace draftgate::testing
