#include "cli_options.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "draftgate/error.h"

namespace draftgate::cli {
namespace {

CLI::Validator integer_check(std::int64_t min, std::int64_t max, const std::string& range) {
  return CLI::Validator(
      [=](std::string& in) -> std::string {
        // Decimal digits only: CLI11's own reading takes "" as 0, 010 as octal and clamps an
        // overflow to the largest integer.
        std::int64_t v = 0;
        const auto [end, ec] = std::from_chars(in.data(), in.data() + in.size(), v);
        const std::size_t digit = !in.empty() && in[0] == '-' ? 1 : 0;
        if (ec == std::errc::result_out_of_range && end == in.data() + in.size())
          return "Value " + in + " does not fit a 64-bit integer";
        if (in.empty() || ec != std::errc() || end != in.data() + in.size() ||
            (in.size() > digit + 1 && in[digit] == '0'))  // CLI11 would read 010 as octal 8
          return "Value " + in + " is not an integer";
        if (v < min || v > max) return "Value " + in + " is not " + range;
        in = std::to_string(v);  // CLI11 converts what the check leaves: plain decimal
        return {};
      },
      "INT " + range);
}

}  // namespace

CLI::Validator integer_range(std::int64_t min, std::int64_t max) {
  return integer_check(min, max, "in " + std::to_string(min) + "…" + std::to_string(max));
}

CLI::Validator non_negative_integer() {
  return integer_check(0, std::numeric_limits<std::int64_t>::max(), "≥ 0");
}

CLI::Option* add_integer_list(CLI::App* cmd, const std::string& name,
                              std::vector<std::int64_t>& values, const std::string& description,
                              const CLI::Validator& element) {
  // The check sees each occurrence's whole list and leaves it as plain decimal elements joined by
  // commas, so the callback's reading cannot fail.
  const CLI::Validator list(
      [element](std::string& in) -> std::string {
        if (in.find(',') == std::string::npos) return element(in);
        std::string canonical;
        std::size_t begin = 0;
        for (int position = 1;; ++position) {
          const std::size_t comma = std::min(in.find(',', begin), in.size());
          std::string piece = in.substr(begin, comma - begin);
          const std::string element_n = "element " + std::to_string(position);
          if (piece.empty()) return "Value " + in + ": " + element_n + " is empty";
          if (std::string error = element(piece); !error.empty())
            return error + " (" + element_n + " of " + in + ")";
          canonical += (position == 1 ? "" : ",") + piece;
          if (comma == in.size()) break;
          begin = comma + 1;
        }
        in = canonical;
        return {};
      },
      element.get_description() + ",…");
  return cmd
      ->add_option_function<std::vector<std::string>>(
          name,
          [&values](const std::vector<std::string>& lists) {
            values.clear();
            for (const std::string& checked : lists)
              for (std::size_t begin = 0; begin <= checked.size();) {
                const std::size_t comma = std::min(checked.find(',', begin), checked.size());
                values.push_back(std::stoll(checked.substr(begin, comma - begin)));
                begin = comma + 1;
              }
          },
          description)
      ->type_name("LIST")
      ->check(list);
}

void require_distinct(const std::vector<std::int64_t>& ids, const char* flag, const char* what) {
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (std::find(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(i), ids[i]) !=
        ids.begin() + static_cast<std::ptrdiff_t>(i))
      throw Error(flag, std::string(what) + " " + std::to_string(ids[i]) + " is given twice");
}

CLI::Validator seed_value() {
  return CLI::Validator(
      [](std::string& in) -> std::string {
        std::uint64_t v = 0;
        const auto [end, ec] = std::from_chars(in.data(), in.data() + in.size(), v);
        if (in.empty() || ec != std::errc() || end != in.data() + in.size() ||
            (in.size() > 1 && in[0] == '0'))  // CLI11 would read 010 as octal 8
          return "Value " + in +
                 " is not an integer in 0…18446744073709551615 (a seed of up to 64 bits)";
        in = std::to_string(v);  // CLI11 converts what the check leaves: plain decimal
        return {};
      },
      "UINT64");
}

CLI::Validator path_value() {
  return CLI::Validator(
      [](std::string& in) -> std::string {
        return in.empty() ? "is an empty path (an unset variable?)" : std::string();
      },
      "");
}

void add_decoding_options(CLI::App* cmd, decode::DecodeConfig& decode) {
  cmd->add_option("--max-new", decode.max_new_tokens, "Tokens to generate per prompt")
      ->check(integer_range(1, decode::kMaxNewTokensLimit));
  add_integer_list(cmd, "--eos", decode.eos_ids, "Stop token ids, comma-separated (default: none)",
                   non_negative_integer());
  cmd->add_option("--tree-budget", decode.tree_budget, "DDTree node budget (0 = linear DFlash)")
      ->check(integer_range(0, decode::kMaxTreeBudget));
  cmd->add_option("--tree-top-k", decode.tree_top_k, "DDTree candidates per depth (0 = budget)")
      ->check(integer_range(0, decode::kMaxTreeBudget));
}

void check_decoding_flags(const decode::DecodeConfig& decode) {
  if (decode.tree_top_k > 0 && decode.tree_budget == 0)
    throw Error("--tree-top-k", "goes with --tree-budget N > 0: it only shapes the DDTree tree",
                "drop it for linear DFlash");
}

void add_device_option(CLI::App* cmd, std::string& device) {
  cmd->add_option("--device", device,
                  "cpu or cuda[:N] (cuda needs a CUDA build of libtorch: docs/gpu.md)");
}

void set_example(CLI::App* cmd, const std::string& example) {
  cmd->footer("\nExample:\n  " + example + "\n");
}

void require_slots(
    const std::vector<std::tuple<std::string, io::ArtifactKind, const char*>>& slots) {
  for (const auto& [path, kind, flag] : slots)
    if (!path.empty()) io::require_slot(path, kind, flag);
}

void require_empty_directory(const std::string& path, const char* flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return;  // a new one, or io::check_outputs' case
  fs::directory_iterator entry(path, ec);
  if (ec || entry == fs::directory_iterator()) return;
  const std::string first = entry->path().filename().string();
  const bool more = entry.increment(ec) != fs::directory_iterator();
  throw Error(path,
              "already holds files (" + first + (more ? ", …" : "") + "); " + flag +
                  " takes a new or empty directory",
              "a checkpoint written there would replace the files it writes and leave the rest "
              "(another checkpoint's shards, its index) to be read with it");
}

}  // namespace draftgate::cli
