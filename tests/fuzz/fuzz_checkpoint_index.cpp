// Input: a model.safetensors.index.json beside a fixed Qwen3.6 config; the checkpoint opens
// metadata-only and its decoder stack resolves, or draftgate::Error.
#include <filesystem>
#include <fstream>

#include "draftgate/io/checkpoint.h"
#include "draftgate/layout/decoder_stack.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace fs = std::filesystem;
  const fs::path index = draftgate::fuzz::as_file(data, size, "ckpt/model.safetensors.index.json");
  static const bool config = [&] {
    fs::copy_file(fs::path(DRAFTGATE_SOURCE_DIR) /
                      "fixtures/real-layouts/qwen36-27b-awq-fantasylord/config.json",
                  index.parent_path() / "config.json", fs::copy_options::overwrite_existing);
    return true;
  }();
  (void)config;
  draftgate::fuzz::expect_only_draftgate_errors([&] {
    const auto ckpt = draftgate::io::Checkpoint::open(index.parent_path());
    draftgate::layout::resolve_decoder_stack(ckpt);
  });
  return 0;
}
