#pragma once
// The one exception type for bad input: it names the file, the problem and (optionally) what to do.
// Frontends map it to exit code 2 and one line on stderr. Check failures are results, never
// exceptions.

#include <stdexcept>
#include <string>

namespace draftgate {

// `s` as one printable line: newlines and other control bytes become spaces.
std::string one_line(std::string s);

class Error : public std::runtime_error {
 public:
  Error(std::string file, std::string what, std::string hint = {});

  const std::string& file() const { return file_; }
  const std::string& problem() const { return problem_; }
  const std::string& hint() const { return hint_; }

  // "FILE: PROBLEM (hint: HINT)" on one line: control bytes inside the parts become spaces, a
  // problem over 2,000 bytes is cut.
  std::string one_line() const;

 private:
  std::string file_;
  std::string problem_;
  std::string hint_;
};

}  // namespace draftgate
