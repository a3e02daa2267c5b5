// Input: vLLM responses with per-request speculative metrics (JSONL), tied to a two-prompt set by
// order.
#include "draftgate/tau/vllm_requests.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  draftgate::tau::VllmRequestsImport in;
  in.responses = draftgate::fuzz::as_file(data, size, "responses.jsonl");
  in.prompts = 2;
  draftgate::fuzz::expect_only_draftgate_errors([&] { draftgate::tau::import_vllm_requests(in); });
  return 0;
}
