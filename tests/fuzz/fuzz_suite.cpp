// Input: a suite file.
#include "checks/suite.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = draftgate::fuzz::as_file(data, size, "suite.json");
  draftgate::fuzz::expect_only_draftgate_errors([&] { draftgate::checks::read_suite(path); });
  return 0;
}
