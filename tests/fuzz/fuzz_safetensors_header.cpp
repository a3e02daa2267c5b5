// Input: 8 bytes little-endian data-buffer size, then the header JSON text.
#include "draftgate/io/safetensors.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 8) return 0;
  std::uint64_t data_size = 0;
  for (int i = 7; i >= 0; --i) data_size = (data_size << 8) | data[i];
  const std::string_view text(reinterpret_cast<const char*>(data + 8), size - 8);
  draftgate::fuzz::expect_only_draftgate_errors(
      [&] { draftgate::io::parse_safetensors_header(text, data_size, "fuzz"); });
  return 0;
}
