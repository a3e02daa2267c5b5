// Input: a prompt set (JSONL).
#include "draftgate/tau/prompt_set.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = draftgate::fuzz::as_file(data, size, "prompts.jsonl");
  draftgate::fuzz::expect_only_draftgate_errors(
      [&] { draftgate::decode::read_prompt_set(path, "the fuzz input"); });
  return 0;
}
