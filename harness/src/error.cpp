#include "draftgate/error.h"

#include <algorithm>

namespace draftgate {
namespace {

std::string flatten(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  return s;
}

std::string compose(const std::string& file, const std::string& what, const std::string& hint) {
  std::string line = file.empty() ? what : file + ": " + what;
  if (!hint.empty()) line += " (hint: " + hint + ")";
  return flatten(line);
}

}  // namespace

Error::Error(std::string file, std::string what, std::string hint)
    : std::runtime_error(compose(file, what, hint)),
      file_(std::move(file)),
      problem_(std::move(what)),
      hint_(std::move(hint)) {}

std::string Error::one_line() const { return std::runtime_error::what(); }

}  // namespace draftgate
