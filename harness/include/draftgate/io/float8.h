#pragma once
// The float8 e4m3fn element type (safetensors F8_E4M3, torch.float8_e4m3fn, OCP FP8 E4M3): 1 sign
// bit, 4 exponent bits (bias 7), 3 mantissa bits; no infinities, and only S.1111.111 (0x7F, 0xFF)
// is NaN, so the largest finite magnitude is 448 (S.1111.110). Exponent 0 is subnormal:
// m/8 x 2^-6. Torch-free.

#include <array>
#include <cstdint>

#include "draftgate/io/dtype.h"

namespace draftgate::io {

inline constexpr float kE4m3Max = 448.0f;

// The five F8_* safetensors types (views of them are raw bytes: libtorch has no float8 type).
bool is_float8(DType dtype);

// The value of every code, indexed by the byte (NaN for 0x7F and 0xFF).
const std::array<float, 256>& e4m3fn_values();
inline float e4m3fn_to_float(std::uint8_t code) { return e4m3fn_values()[code]; }

// The nearest code to `value`, ties to the even code (round-to-nearest-even, as a cast to
// torch.float8_e4m3fn rounds), saturating at +-448 (transformers clamps to the finite range
// before casting; see model/fp8_weights.h). NaN gives 0x7F.
std::uint8_t float_to_e4m3fn(float value);

}  // namespace draftgate::io
