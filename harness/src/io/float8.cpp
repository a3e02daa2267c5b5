#include "draftgate/io/float8.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace draftgate::io {
namespace {

std::array<float, 256> make_table() {
  std::array<float, 256> table{};
  for (int code = 0; code < 256; ++code) {
    const int exponent = (code >> 3) & 0xF, mantissa = code & 0x7;
    float magnitude = exponent == 0
                          ? std::ldexp(static_cast<float>(mantissa), -9)
                          : std::ldexp(1.0f + static_cast<float>(mantissa) / 8, exponent - 7);
    if ((code & 0x7F) == 0x7F) magnitude = std::numeric_limits<float>::quiet_NaN();
    table[static_cast<std::size_t>(code)] = (code & 0x80) ? -magnitude : magnitude;
  }
  return table;
}

}  // namespace

bool is_float8(DType dtype) {
  return dtype == DType::F8_E4M3 || dtype == DType::F8_E5M2 || dtype == DType::F8_E8M0 ||
         dtype == DType::F8_E4M3FNUZ || dtype == DType::F8_E5M2FNUZ;
}

const std::array<float, 256>& e4m3fn_values() {
  static const std::array<float, 256> table = make_table();
  return table;
}

std::uint8_t float_to_e4m3fn(float value) {
  if (std::isnan(value)) return 0x7F;
  const std::uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  const float magnitude = std::min(std::fabs(value), kE4m3Max);
  // Codes 0x00..0x7E are the non-negative finite values in increasing order.
  const auto& table = e4m3fn_values();
  const auto upper = std::lower_bound(table.begin(), table.begin() + 0x7F, magnitude);
  auto code = static_cast<int>(upper - table.begin());  // first value >= magnitude
  if (code > 0 && *upper != magnitude) {
    const float above = *upper - magnitude, below = magnitude - table[code - 1];
    if (below < above || (below == above && (code - 1) % 2 == 0)) --code;
  }
  return static_cast<std::uint8_t>(sign | code);
}

}  // namespace draftgate::io
