// Input: SGLang /generate responses (JSONL), tied to a two-prompt set by id or order.
#include "draftgate/tau/sglang_requests.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  draftgate::tau::SglangImport in;
  in.requests = draftgate::fuzz::as_file(data, size, "responses.jsonl");
  in.prompt_ids = std::vector<std::string>{"p1", "p2"};
  draftgate::fuzz::expect_only_draftgate_errors(
      [&] { draftgate::tau::import_sglang_requests(in); });
  return 0;
}
