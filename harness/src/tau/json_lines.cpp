#include "draftgate/tau/json_lines.h"

#include "draftgate/error.h"
#include "draftgate/io/input_file.h"
#include "draftgate/io/json_util.h"

namespace draftgate::tau {

void for_each_json_line(
    const std::filesystem::path& path, const std::string& what,
    const std::function<void(const nlohmann::json&, const std::string&)>& each) {
  for_each_json_line(io::read_input_file(path, kMaxResponsesBytes, "JSON lines"), path.string(),
                     "line", what, each);
}

void for_each_json_line(
    std::string_view text, const std::string& file, const std::string& unit,
    const std::string& what,
    const std::function<void(const nlohmann::json&, const std::string&)>& each) {
  std::size_t number = 0, start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    const std::string_view line(text.data() + start, nl - start);
    start = nl + 1;
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = unit + " " + std::to_string(number) + ": ";
    nlohmann::json doc;
    try {
      doc = io::parse_json_strict(line, file);
    } catch (const Error& e) {
      throw Error(file, where + "not a " + what + ": " + e.problem(),
                  "one JSON response a line (JSONL)");
    }
    each(doc, where);
  }
}

}  // namespace draftgate::tau
