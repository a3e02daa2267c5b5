// Input: a golden file.
#include "draftgate/golden/golden.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = draftgate::fuzz::as_file(data, size, "golden.json");
  draftgate::fuzz::expect_only_draftgate_errors([&] { draftgate::golden::read_golden(path); });
  return 0;
}
