// The one JSON reader every file kind goes through: depth and size limits, duplicate keys in
// linear time, NUL bytes; bounded excerpts for messages; reports that survive non-UTF-8 bytes; and
// the atomic writer's create-new mode that goldens use.

#include "draftgate/io/json_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "draftgate/io/atomic_file.h"
#include "error_text.h"
#include "test_files.h"

namespace draftgate {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

std::string nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(JsonUtil, DepthIsLimitedWhereTheTextIsRead) {
  EXPECT_NO_THROW(io::parse_json_strict(nested(io::kMaxJsonDepth), "f"));
  EXPECT_EQ(testing::error_of([] { io::parse_json_strict(nested(io::kMaxJsonDepth + 1), "f"); }),
            "f: JSON nests deeper than 64 levels");
  EXPECT_THAT(testing::error_of([] { io::parse_json_strict(nested(1000000), "f"); }),
              HasSubstr("nests deeper"));
}

// At 200,000 nested members (the callback parser this replaced took minutes there); the scan's
// linear time is measured by tests/bench/json_bench.cpp, not timed here.
TEST(JsonUtil, DuplicateKeysAreFoundAmongManyNestedMembers) {
  std::string text = "{";
  for (int i = 0; i < 200000; ++i) text += "\"k" + std::to_string(i) + "\":{\"a\":1},";
  EXPECT_EQ(testing::error_of([&] { io::parse_json_strict(text + "\"k7\":0}", "f"); }),
            "f: duplicate JSON key \"k7\"");
  EXPECT_EQ(io::parse_json_strict(text + "\"last\":0}", "f").size(), 200001u);
  EXPECT_EQ(testing::error_of([] { io::parse_json_strict("{\"a\":{\"b\":1,\"b\":2}}", "f"); }),
            "f: duplicate JSON key \"b\"");
  EXPECT_NO_THROW(io::parse_json_strict("{\"a\":{\"b\":1},\"c\":{\"b\":2}}", "f"));
}

TEST(JsonUtil, NulBytesSizeAndSyntaxAreNamedWithoutLibraryText) {
  EXPECT_EQ(testing::error_of([] { io::parse_json_strict(std::string("{}\0{garbage", 11), "f"); }),
            "f: invalid JSON: a NUL byte at byte 2");
  EXPECT_THAT(testing::error_of([] { io::parse_json_strict("{}", "f", 1); }),
              HasSubstr("over the 1-byte limit"));
  const std::string syntax = testing::error_of([] { io::parse_json_strict("{\"a\": }", "f"); });
  EXPECT_THAT(syntax, HasSubstr("f: invalid JSON at byte 7 (line 1, column 7): "));
  for (const char* library : {"json.exception", "parse error", "syntax error while parsing"})
    EXPECT_THAT(syntax, ::testing::Not(HasSubstr(library)));
}

TEST(JsonUtil, ExcerptsAreBounded) {
  EXPECT_EQ(io::json_excerpt(json(3)), "3");
  EXPECT_EQ(io::json_excerpt(json("abc")), "\"abc\"");
  const std::string big = io::json_excerpt(json(std::string(10000000, 'x')));
  EXPECT_LE(big.size(), 64u);
  EXPECT_THAT(big, ::testing::EndsWith("…"));
  const json deep = io::parse_json_strict(nested(io::kMaxJsonDepth), "f");
  EXPECT_EQ(io::json_excerpt(deep), "[[[[…]]]]");
  json wide = json::array();
  for (int i = 0; i < 100000; ++i) wide.push_back(i);
  EXPECT_LE(io::json_excerpt(wide, 40).size(), 44u);
}

TEST(JsonUtil, ReportsEscapeBytesThatAreNotUtf8) {
  const json report = {{"path", "/data/caf\xe9/ckpt"}, {"ok", "caf\xc3\xa9"}};
  EXPECT_THROW((void)report.dump(), json::type_error);
  const json back = json::parse(io::dump_json(report));
  EXPECT_EQ(back["path"], "/data/caf\\xe9/ckpt");
  EXPECT_EQ(back["ok"], "caf\xc3\xa9");
}

TEST(AtomicFile, CreateNewNeverReplaces) {
  const auto dir = testing::fresh_dir("atomic_create_new");
  const auto path = dir / "golden.json";
  io::write_text_atomically(path, "first", io::WriteMode::kCreateNew);
  EXPECT_EQ(testing::error_of(
                [&] { io::write_text_atomically(path, "second", io::WriteMode::kCreateNew); }),
            path.string() + ": exists; refusing to replace it (hint: pass --force to replace it)");
  EXPECT_EQ(testing::read_file(path), "first");
  io::write_text_atomically(path, "third");
  EXPECT_EQ(testing::read_file(path), "third");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1) << "temporary left";
}

}  // namespace
}  // namespace draftgate
