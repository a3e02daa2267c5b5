#include "draftgate/error.h"

#include <algorithm>

#include "draftgate/format.h"

namespace draftgate {
namespace {

// A problem quotes input (a golden's string, a tensor name): past this many bytes the rest is
// cut, so a 2 MB string in a file is not a 2 MB error line.
constexpr std::size_t kMaxProblemBytes = 2000;

std::string compose(const std::string& file, const std::string& what, const std::string& hint) {
  std::string line = (file.empty() ? "" : file + ": ") + at_most(what, kMaxProblemBytes);
  if (!hint.empty()) line += " (hint: " + hint + ")";
  return one_line(line);
}

}  // namespace

std::string one_line(std::string s) {
  // Newlines would split the line; other control bytes (ESC sequences) would drive the terminal.
  std::replace_if(
      s.begin(), s.end(),
      [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == '\x7f'; }, ' ');
  return s;
}

Error::Error(std::string file, std::string what, std::string hint)
    : std::runtime_error(compose(file, what, hint)),
      file_(std::move(file)),
      problem_(std::move(what)),
      hint_(std::move(hint)) {}

std::string Error::one_line() const { return std::runtime_error::what(); }

}  // namespace draftgate
