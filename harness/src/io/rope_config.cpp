#include "draftgate/io/rope_config.h"

#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/json_util.h"

namespace draftgate::io {
using nlohmann::json;

std::vector<std::pair<std::string, double>> rope_number_sources(const ModelConfig& c,
                                                                const char* key) {
  std::vector<std::pair<std::string, double>> found;
  auto take = [&](const json& scope, const std::string& where_given) {
    auto it = scope.find(key);
    if (it == scope.end() || it->is_null()) return;
    if (!it->is_number())
      throw Error(c.file(), where_given + " must be a number, got " + json_excerpt(*it));
    found.emplace_back(where_given, it->get<double>());
  };
  const std::string text_prefix = c.text_path().empty() ? "" : c.text_path() + ".";
  take(c.text(), text_prefix + key);
  if (!c.text_path().empty()) take(c.root(), key);
  for (const char* block : {"rope_parameters", "rope_scaling"}) {
    auto it = c.text().find(block);
    if (it != c.text().end() && it->is_object()) take(*it, text_prefix + block + "." + key);
  }
  return found;
}

std::optional<double> agreed_rope_number(const ModelConfig& c, const char* key) {
  const auto sources = rope_number_sources(c, key);
  if (sources.empty()) return std::nullopt;
  for (const auto& [where, value] : sources)
    if (value != sources.front().second)
      throw Error(c.file(),
                  sources.front().first + " = " + format_number(sources.front().second, 6) +
                      " but " + where + " = " + format_number(value, 6),
                  std::string("keep one ") + key + ": engines read different places");
  return sources.front().second;
}

std::string rope_type(const ModelConfig& c) {
  std::string type, from;
  for (const char* block : {"rope_parameters", "rope_scaling"}) {
    auto it = c.text().find(block);
    if (it == c.text().end() || it->is_null()) continue;
    if (!it->is_object()) throw Error(c.file(), c.where(block) + " must be an object or null");
    for (const char* key : {"rope_type", "type"}) {
      auto v = it->find(key);
      if (v == it->end() || v->is_null()) continue;
      const std::string here = c.where(block) + "." + key;
      if (!v->is_string())
        throw Error(c.file(), here + " must be a string, got " + json_excerpt(*v));
      if (!type.empty() && *v != type)
        throw Error(c.file(), from + " = \"" + type + "\" but " + here + " = \"" +
                                  v->get<std::string>() + "\"");
      type = v->get<std::string>();
      from = here;
    }
  }
  return type.empty() ? "default" : type;
}

}  // namespace draftgate::io
