#include "draftgate/tokenizer/json_place.h"

#include "draftgate/error.h"
#include "draftgate/io/json_util.h"

namespace draftgate::tokenizer {

using nlohmann::json;

JsonPlace JsonPlace::at(const std::string& key) const { return {file, pointer + "/" + key}; }
JsonPlace JsonPlace::at(std::size_t index) const {
  return {file, pointer + "/" + std::to_string(index)};
}

void JsonPlace::fail(const std::string& problem, const std::string& hint) const {
  throw Error(file, (pointer.empty() ? std::string("/") : pointer) + ": " + problem, hint);
}

const json* JsonPlace::find(const json& object, const std::string& key) const {
  if (!object.is_object()) fail("must be an object, got " + io::json_excerpt(object));
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

const json& JsonPlace::require(const json& object, const std::string& key) const {
  const json* v = find(object, key);
  if (v == nullptr) fail("has no \"" + key + "\"");
  return *v;
}

std::string JsonPlace::string_of(const json& object, const std::string& key) const {
  const json& v = require(object, key);
  if (!v.is_string()) at(key).fail("must be a string, got " + io::json_excerpt(v));
  return v.get<std::string>();
}

bool JsonPlace::bool_of(const json& object, const std::string& key, bool fallback) const {
  const json* v = find(object, key);
  if (v == nullptr || v->is_null()) return fallback;
  if (!v->is_boolean()) at(key).fail("must be true or false, got " + io::json_excerpt(*v));
  return v->get<bool>();
}

bool JsonPlace::flag_of(const json& object, const std::string& key) const {
  const json& v = require(object, key);
  if (!v.is_boolean()) at(key).fail("must be true or false, got " + io::json_excerpt(v));
  return v.get<bool>();
}

bool JsonPlace::flag_or(const json& object, const std::string& key, bool fallback) const {
  return find(object, key) == nullptr ? fallback : flag_of(object, key);
}

std::string JsonPlace::type_of(const json& object) const { return string_of(object, "type"); }

}  // namespace draftgate::tokenizer
