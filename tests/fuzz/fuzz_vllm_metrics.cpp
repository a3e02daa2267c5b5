// Input: a vLLM /metrics scrape (Prometheus text), read as the scrape after a run.
#include "draftgate/tau/vllm_metrics.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = draftgate::fuzz::as_file(data, size, "after.txt");
  draftgate::fuzz::expect_only_draftgate_errors([&] {
    draftgate::tau::VllmImport in;
    in.after = draftgate::tau::read_scrape_file(path);
    draftgate::tau::import_vllm_metrics(in);
  });
  return 0;
}
