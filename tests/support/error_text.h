#pragma once
// The one-line message of the draftgate::Error that `f` throws, or "(no error)".

#include <functional>
#include <string>

#include "draftgate/error.h"

namespace draftgate::testing {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.one_line();
  }
  return "(no error)";
}

}  // namespace draftgate::testing
