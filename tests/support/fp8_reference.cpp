#include "fp8_reference.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "draftgate/io/checkpoint.h"
#include "draftgate/model/tensor_view.h"

namespace draftgate::testing {

double e4m3fn_reference(std::uint8_t code) {
  const int sign = code >> 7, exponent = (code >> 3) & 0xF, mantissa = code & 0x7;
  if (exponent == 15 && mantissa == 7) return std::numeric_limits<double>::quiet_NaN();
  const double magnitude = exponent == 0 ? std::pow(2.0, -6) * (mantissa / 8.0)
                                         : std::pow(2.0, exponent - 7) * (1.0 + mantissa / 8.0);
  return sign ? -magnitude : magnitude;
}

void write_dequantized_copy(const std::filesystem::path& fp8_dir,
                            const std::filesystem::path& out) {
  const io::Checkpoint ckpt = io::Checkpoint::open(fp8_dir);
  nlohmann::json config = nlohmann::json::parse(std::ifstream(fp8_dir / "config.json"));
  const nlohmann::json q = config["quantization_config"];
  const std::int64_t block_rows = q["weight_block_size"][0], block_cols = q["weight_block_size"][1];
  config.erase("quantization_config");
  io::NamedTensors tensors;
  for (const auto& name : ckpt.names()) {
    const io::TensorInfo& info = *ckpt.info(name);
    if (name.size() > 10 && name.compare(name.size() - 10, 10, "_scale_inv") == 0) continue;
    const at::Tensor stored = io::load_tensor(ckpt, name);
    if (info.dtype != io::DType::F8_E4M3) {
      tensors.emplace_back(name, stored.to(at::kDouble));
      continue;
    }
    const at::Tensor scale = io::load_tensor(ckpt, name + "_scale_inv").to(at::kDouble);
    at::Tensor w = at::empty(stored.sizes(), at::kDouble);
    const auto codes = stored.accessor<std::uint8_t, 2>();
    const auto scales = scale.accessor<double, 2>();
    auto values = w.accessor<double, 2>();
    for (std::int64_t r = 0; r < w.size(0); ++r)
      for (std::int64_t c = 0; c < w.size(1); ++c)
        values[r][c] = e4m3fn_reference(codes[r][c]) * scales[r / block_rows][c / block_cols];
    tensors.emplace_back(name, w);
  }
  std::filesystem::create_directories(out);
  std::ofstream(out / "config.json") << config.dump(2);
  io::write_tensors(out / "model.safetensors", tensors);
}

}  // namespace draftgate::testing
