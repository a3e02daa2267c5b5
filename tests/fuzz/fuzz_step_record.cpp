// Input: a step record file.
#include "draftgate/train/step_record.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = draftgate::fuzz::as_file(data, size, "record.safetensors");
  draftgate::fuzz::expect_only_draftgate_errors([&] { draftgate::train::read_step_record(path); });
  return 0;
}
