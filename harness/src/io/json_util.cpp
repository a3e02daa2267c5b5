#include "draftgate/io/json_util.h"

#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "draftgate/error.h"

namespace draftgate::io {
namespace fs = std::filesystem;
using nlohmann::json;

json parse_json_strict(std::string_view text, const std::string& file) {
  std::vector<std::set<std::string>> keys_per_object;
  auto on_event = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        keys_per_object.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!keys_per_object.empty()) keys_per_object.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys_per_object.empty() &&
            !keys_per_object.back().insert(parsed.get<std::string>()).second)
          throw Error(file, "duplicate JSON key \"" + parsed.get<std::string>() + "\"");
        break;
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), on_event);
  } catch (const json::exception& e) {
    throw Error(file, std::string("invalid JSON: ") + e.what());
  }
}

json read_json_file(const fs::path& path, std::uint64_t max_bytes) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw Error(path.string(), "missing or not a regular file");
  const auto size = fs::file_size(path, ec);
  if (ec) throw Error(path.string(), "cannot stat: " + ec.message());
  if (size > max_bytes)
    throw Error(path.string(), "file is " + std::to_string(size) + " bytes, over the " +
                                   std::to_string(max_bytes) + "-byte limit for JSON");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string(), "cannot open for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return parse_json_strict(buffer.str(), path.string());
}

}  // namespace draftgate::io
