#pragma once
// Reading tokenizer.json's parts with every error naming the file and the JSON pointer of the
// place ("tokenizer.json: /pre_tokenizer/pretokenizers/0/pattern: ...").

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace draftgate::tokenizer {

struct JsonPlace {
  std::string file;
  std::string pointer;  // "" for the root

  JsonPlace at(const std::string& key) const;
  JsonPlace at(std::size_t index) const;
  [[noreturn]] void fail(const std::string& problem, const std::string& hint = {}) const;

  // The member `key` of `object` (which must be an object), or nullptr when absent.
  const nlohmann::json* find(const nlohmann::json& object, const std::string& key) const;
  const nlohmann::json& require(const nlohmann::json& object, const std::string& key) const;
  // Typed members; an absent or null optional member gives `fallback`.
  std::string string_of(const nlohmann::json& object, const std::string& key) const;
  bool bool_of(const nlohmann::json& object, const std::string& key, bool fallback) const;
  // A boolean the library's serde struct requires (no default): absent or null is refused, as the
  // library refuses the file ("missing field", "invalid type: null, expected a boolean").
  bool flag_of(const nlohmann::json& object, const std::string& key) const;
  // A boolean with a serde default: absent gives `fallback`, null is refused (a bool, not an
  // Option, to the library).
  bool flag_or(const nlohmann::json& object, const std::string& key, bool fallback) const;
  // The "type" member of a component, which must be a string.
  std::string type_of(const nlohmann::json& object) const;
};

}  // namespace draftgate::tokenizer
