#pragma once
// SHA-256 (FIPS 180-4): the content hash that identifies a prompt set.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace draftgate::io {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view bytes);
  std::string hex_digest();  // finalises; call once

 private:
  void block(const unsigned char* p);
  std::array<std::uint32_t, 8> h_;
  unsigned char buffer_[64];
  std::size_t buffered_ = 0;
  std::uint64_t total_ = 0;
};

std::string sha256_hex(std::string_view bytes);

}  // namespace draftgate::io
