#pragma once
// An independent reading of block-FP8 checkpoints for the tests: e4m3fn decoded from the OCP FP8
// formula in double, and a checkpoint's FP8 weights dequantized element by element into a plain
// copy — sharing nothing with the engine's reader but the safetensors parser.

#include <cstdint>
#include <filesystem>

namespace draftgate::testing {

// (-1)^s x 2^(e-7) x (1 + m/8) for exponent e > 0, (-1)^s x 2^-6 x m/8 for e = 0; NaN for
// S.1111.111.
double e4m3fn_reference(std::uint8_t code);

// Writes `out` (config.json without quantization_config, model.safetensors in float64): every
// F8_E4M3 weight of `fp8_dir` as code value x its block's weight_scale_inv, the scales dropped,
// every other tensor as stored.
void write_dequantized_copy(const std::filesystem::path& fp8_dir, const std::filesystem::path& out);

}  // namespace draftgate::testing
