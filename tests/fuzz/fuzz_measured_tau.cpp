// Input: a measured-τ file (draftgate tau import output).
#include "draftgate/tau/measured_tau.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = draftgate::fuzz::as_file(data, size, "measured.json");
  draftgate::fuzz::expect_only_draftgate_errors([&] { draftgate::tau::read_measured_tau(path); });
  return 0;
}
