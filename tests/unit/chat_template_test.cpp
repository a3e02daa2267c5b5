// The chat-template interpreter on its own: renderings computed by hand, every refusal (syntax
// error, unsupported construct, bound, raise_exception) naming the template line, and how a
// checkpoint's template and a messages file are found and checked. The byte-for-byte comparison
// with Python Jinja2 is tests/template/chat_template_oracle_test.cpp.

#include "draftgate/template/chat_template.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "draftgate/error.h"

namespace draftgate::chat_template {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using ::testing::HasSubstr;

const fs::path kSource = fs::path(DRAFTGATE_SOURCE_DIR);

std::string render_text(const std::string& tpl, const ojson& messages = ojson::array(),
                        const RenderLimits& limits = {}) {
  RenderRequest r;
  r.messages = messages;
  return ChatTemplate::parse(tpl, "t.jinja").render(r, limits);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.one_line();
  }
  return "(no error)";
}

std::string render_error(const std::string& tpl, const RenderLimits& limits = {}) {
  return error_of([&] { render_text(tpl, ojson::array(), limits); });
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(ChatTemplate, Qwen3RendersAsTheModelCardShows) {
  // Hand-written from the template's text: a user turn, then the generation prompt; with
  // enable_thinking=false the empty think block is added, unset it is not.
  const std::string qwen3 = read(kSource / "fixtures/chat-templates/qwen3.jinja");
  const ChatTemplate t = ChatTemplate::parse(qwen3, "qwen3.jinja");
  RenderRequest r;
  r.messages =
      ojson::parse(R"([{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}])");
  EXPECT_EQ(
      t.render(r),
      "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  r.enable_thinking = false;
  EXPECT_EQ(
      t.render(r),
      "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
      "<think>\n\n</think>\n\n");
  r.enable_thinking = true;
  r.add_generation_prompt = false;
  EXPECT_EQ(t.render(r), "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplate, WhitespaceControlAsTransformersConfiguresJinja) {
  // trim_blocks drops the newline after a block tag, lstrip_blocks the indentation before it.
  EXPECT_EQ(render_text("a\n  {% if true %}\n  b\n  {% endif %}\nc"), "a\n  b\nc");
  EXPECT_EQ(render_text("x  {%- if true -%}  y  {%- endif -%}  z"), "xyz");
  EXPECT_EQ(render_text("{{ 'a' }}\n{{ 'b' }}"), "a\nb");
  EXPECT_EQ(render_text("a\n"), "a");  // keep_trailing_newline=False
}

TEST(ChatTemplate, PythonSemanticsOfValues) {
  EXPECT_EQ(
      render_text("{{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1.0 }} {{ 1e-5 }} {{ -7 // 2 }} {{ -7 % 3 }}"),
      "0.30000000000000004 1e+20 1.0 1e-05 -4 2");
  EXPECT_EQ(
      render_text("{{ 'héllo'[::-1] }}|{{ 'héllo'|length }}|{{ none }}|{{ true }}|{{ nope }}"),
      "olléh|5|None|True|");
  EXPECT_EQ(render_text("{{ {'b': 1, 'a': 'é'}|tojson }}"), "{\"b\": 1, \"a\": \"é\"}");
  EXPECT_EQ(render_text("{{ {'b': 1, 'a': [2]}|tojson(indent=2, sort_keys=true) }}"),
            "{\n  \"a\": [\n    2\n  ],\n  \"b\": 1\n}");
  EXPECT_EQ(
      render_text("{% set x = 5 %}{% for i in [1,2] %}{{ x }}{% set x = i %}{% endfor %}{{ x }}"),
      "555");
  // Python's float divmod (CPython float_divmod) and exact int / float comparison, each checked
  // against python3: inf // 1 is nan, -0.0 % 1 is 0.0, 2**53 + 1 is no float.
  EXPECT_EQ(render_text("{{ (1e308*10) // 1 }}|{{ -7.5 % 2 }}|{{ 7.5 % -2 }}|{{ -0.0 % 1 }}|"
                        "{{ 5 // 0.3 }}|{{ -9223372036854775807 - 1 }}|"
                        "{{ (-9223372036854775807 - 1) % -1 }}"),
            "nan|0.5|-0.5|0.0|16.0|-9223372036854775808|0");
  EXPECT_EQ(render_text("{{ 9223372036854775807 == 9223372036854775808.0 }}|"
                        "{{ 2**53 + 1 == (2**53 + 1) * 1.0 }}|{{ 2**53 + 1 > (2**53 + 1) * 1.0 }}|"
                        "{{ 3 == 3.0 }}"),
            "False|False|True|True");
  // Python's errors, raised as Python raises them (the integer division used to trap: SIGFPE).
  EXPECT_THAT(render_error("{{ 0 ** -1 }}"),
              HasSubstr("rendering failed: 0.0 cannot be raised to a negative power"));
  EXPECT_THAT(render_error("{{ 1.5 // 0 }}"), HasSubstr("float floor division by zero"));
  EXPECT_THAT(render_error("{{ 10.0 ** 400 }}"), HasSubstr("Numerical result out of range"));
  // A step past the 64-bit range ends the range (it used to overflow).
  EXPECT_EQ(render_text("{% for i in range(9223372036854775800, 9223372036854775807, 5) %}{{ i }} "
                        "{% endfor %}"),
            "9223372036854775800 9223372036854775805 ");
  EXPECT_EQ(
      render_text("{% for i in range(-9223372036854775800, -9223372036854775807 - 1, -5) %}{{ i "
                  "}} {% endfor %}"),
      "-9223372036854775800 -9223372036854775805 ");
  for (const char* beyond :
       {"{{ (-9223372036854775807 - 1) // -1 }}", "{{ (-9223372036854775807 - 1)|abs }}"})
    EXPECT_THAT(render_error(beyond), HasSubstr("an integer beyond 64 bits is not supported"))
        << beyond;
}

TEST(ChatTemplate, SyntaxErrorsNameTheLine) {
  EXPECT_THAT(error_of([] { ChatTemplate::parse("a\n{% if x %}\nno end", "t.jinja"); }),
              HasSubstr("t.jinja: line 3: template syntax error: unexpected end of template, "
                        "expected 'elif' or 'else' or 'endif'"));
  EXPECT_THAT(error_of([] { ChatTemplate::parse("\n\n{{ 'abc }}", "t.jinja"); }),
              HasSubstr("t.jinja: line 3: template syntax error: unterminated string"));
  EXPECT_THAT(error_of([] { ChatTemplate::parse("{{ a b }}", "t.jinja"); }),
              HasSubstr("line 1: template syntax error: expected end of print statement, got 'b'"));
  EXPECT_THAT(
      error_of([] { ChatTemplate::parse("x\n{% endfor %}", "t.jinja"); }),
      HasSubstr("line 2: template syntax error: unexpected 'endfor': the innermost open block is "
                "not 'for'"));
  // A mismatched end tag is a syntax error, not an unsupported statement; a non-ASCII name and a
  // hexadecimal literal are named as what they are, never as a raw byte.
  EXPECT_THAT(error_of([] { ChatTemplate::parse("{% for x in [1] %}{% endif %}", "t.jinja"); }),
              HasSubstr("unexpected 'endif': the innermost open block is not 'if'"));
  EXPECT_THAT(error_of([] { ChatTemplate::parse("{{ \xE6\x97\xA5 }}", "t.jinja"); }),
              HasSubstr("unsupported template construct: a non-ASCII character outside a string "
                        "(U+65E5)"));
  EXPECT_THAT(error_of([] { ChatTemplate::parse("{{ 0x1F }}", "t.jinja"); }),
              HasSubstr("unsupported template construct: hexadecimal, octal and binary integer"));
}

TEST(ChatTemplate, UnsupportedConstructsAreRefusedNeverRendered) {
  struct Refused {
    std::string tpl;
    std::string says;
  };
  const std::vector<Refused> refused = {
      {"{% raw %}x{% endraw %}", "line 1: unsupported template construct: the 'raw' statement"},
      {"\n{% include 'other.jinja' %}",
       "line 2: unsupported template construct: the 'include' statement"},
      {"{% filter upper %}x{% endfilter %}", "the 'filter' statement"},
      {"{% call m() %}x{% endcall %}", "the 'call' statement"},
      {"{% set x %}body{% endset %}", "block assignment"},
      {"{% for x in y recursive %}{% endfor %}", "recursive loops"},
      {"\n\n{{ messages|map(attribute='role')|join }}",
       "line 3: unsupported template construct: the 'map' filter"},
      {"{{ 4 is divisibleby 2 }}", "the 'divisibleby' test"},
      {"{% set a, b = 1, 2 %}", "several names at once"},
  };
  for (const Refused& r : refused)
    EXPECT_THAT(error_of([&] { ChatTemplate::parse(r.tpl, "t.jinja"); }), HasSubstr(r.says))
        << r.tpl;
  // Refused when reached while rendering: what would need Python's repr, the sandbox's list
  // mutation, str methods draftgate does not implement, Markup's escaping arithmetic.
  EXPECT_THAT(render_error("\n{{ [1, 2] }}"),
              HasSubstr("line 2: unsupported template construct: writing a list as text"));
  EXPECT_THAT(render_error("{{ [1].append(2) }}"), HasSubstr("the list method .append()"));
  EXPECT_THAT(render_error("{{ 'ab'.title() }}"), HasSubstr("the str method .title()"));
  EXPECT_THAT(render_error("{{ {'a': 1}|tojson|safe + 'x' }}"), HasSubstr("|safe (Markup)"));
  EXPECT_THAT(render_error("{{ cycler(1, 2) }}"), HasSubstr("'cycler' is not supported"));
  EXPECT_THAT(render_error("{{ 'É'|lower }}"), HasSubstr("non-ASCII"));
  EXPECT_THAT(render_error("{{ (-8) ** 0.5 }}"), HasSubstr("is complex, which is not supported"));
  // Defined in Jinja2: refused, not read as undefined (`is defined` rendered False).
  EXPECT_THAT(render_error("{% for i in [1] %}{{ loop.cycle is defined }}{% endfor %}"),
              HasSubstr("loop.cycle is not supported"));
  // What Jinja2 and Python render with arguments draftgate does not take: unsupported, not a
  // rendering failure (a wrong call to the same callee still is one).
  for (const char* python : {"{{ '%d' % 3 }}", "{{ messages|join(attribute='role') }}",
                             "{{ 'abc'.startswith('b', 1) }}", "{{ 'abc'.endswith('b', 0, 2) }}"})
    EXPECT_THAT(render_error(python), HasSubstr("unsupported template construct")) << python;
  EXPECT_THAT(render_error("{{ 'abc'.startswith('a', 0, 1, 2) }}"),
              HasSubstr("rendering failed: startswith takes at most 1 argument(s), got 4"));
  EXPECT_THAT(render_error("{{ [1]|join(sep='x') }}"),
              HasSubstr("rendering failed: join got an unexpected keyword argument 'sep'"));
}

TEST(ChatTemplate, RaiseExceptionGivesTheTemplatesMessage) {
  EXPECT_THAT(
      render_error("ok\n{{ raise_exception('No user query found in messages.') }}"),
      HasSubstr(
          "t.jinja: line 2: the template raised an exception: No user query found in messages."));
}

TEST(ChatTemplate, RenderingIsBoundedInStepsOutputAndDepth) {
  RenderLimits small;
  small.max_steps = 100000;
  EXPECT_THAT(
      render_error("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}",
                   small),
      HasSubstr("line 1: rendering did not end within 100000 steps"));
  small.max_output_bytes = 1000;
  EXPECT_THAT(
      render_error("{% for i in range(100) %}\n{{ 'xxxxxxxxxxxxxxxxxxxx' }}{% endfor %}", small),
      HasSubstr("the rendered text passed 1000 bytes"));
  EXPECT_THAT(render_error("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}"),
              HasSubstr("macros nested deeper than 200"));
  EXPECT_THAT(render_error("{% set s = namespace(v='x') %}{% for i in range(40) %}{% set s.v = s.v "
                           "+ s.v %}{% endfor %}"),
              HasSubstr("a string grew past 67108864 bytes"));
  // A string made into a list of items is bounded before the items are made (a 10 M-character
  // loop took 3.2 GB before the step limit ended it).
  for (const char* many :
       {"{% for i in 'x' * 2000000 %}{% endfor %}", "{{ ('x ' * 2000000).split()|length }}",
        "{{ ('x,' * 2000000).split(',')|length }}", "{{ ('x' * 2000000)|list|length }}"})
    EXPECT_THAT(render_error(many), HasSubstr("a string made into a list of more than 1048576"))
        << many;
  EXPECT_THAT(render_error("{{ messages|tojson(indent=99999999999) }}"),
              HasSubstr("a string grew past 67108864 bytes (tojson indent 99999999999)"));
  // Nesting past 256 levels is refused before the stack would overflow: blocks, parentheses,
  // operator and filter chains in the template, lists and namespaces built while rendering.
  std::string ifs;
  for (int i = 0; i < 300; ++i) ifs += "{% if 1 %}";
  for (int i = 0; i < 300; ++i) ifs += "{% endif %}";
  for (const std::string& deep :
       {ifs, "{{ " + std::string(300, '(') + "1" + std::string(300, ')') + " }}",
        "{{ 1" +
            [] {
              std::string s;
              for (int i = 0; i < 300; ++i) s += " + 1";
              return s;
            }() +
            " }}",
        "{{ 'x'" +
            [] {
              std::string s;
              for (int i = 0; i < 300; ++i) s += "|trim";
              return s;
            }() +
            " }}"})
    EXPECT_THAT(render_error(deep), HasSubstr("blocks or expressions nested deeper than 256"));
  EXPECT_THAT(render_error("{% set ns = namespace(x=1) %}{% for i in range(100000) %}{% set ns.x = "
                           "[ns.x] %}{% endfor %}{{ ns.x|tojson }}"),
              HasSubstr("lists, dicts and namespaces nested deeper than 256"));
  EXPECT_THAT(render_error("{% set h = namespace(n=none) %}{% for i in range(100000) %}{% set b = "
                           "namespace(x=none) %}{% set b.x = h.n %}{% set h.n = b %}{% endfor %}"),
              HasSubstr("lists, dicts and namespaces nested deeper than 256"));
  // A list holding a namespace that grows after the list was made (an outside review's chain).
  EXPECT_THAT(render_error("{% set h = namespace(n=none) %}{% for i in range(100000) %}{% set b = "
                           "namespace(x=none) %}{% set l = [b] %}{% set b.x = h.n %}{% set h.n = "
                           "l %}{% endfor %}"),
              HasSubstr("lists, dicts and namespaces nested deeper than 256"));
  // A real template's nesting is far inside: 100 blocks and lists deep render.
  std::string shallow;
  for (int i = 0; i < 100; ++i) shallow += "{% if 1 %}";
  shallow +=
      "{% set ns = namespace(x=1) %}{% for i in range(100) %}{% set ns.x = [ns.x] %}"
      "{% endfor %}{{ ns.x|tojson|length }}";
  for (int i = 0; i < 100; ++i) shallow += "{% endif %}";
  EXPECT_EQ(render_text(shallow), "201");
  // Within the default bounds the real templates take a few thousand steps per conversation.
  EXPECT_EQ(render_text("{% for i in range(3) %}{{ i }}{% endfor %}"), "012");
}

TEST(ChatTemplate, MessagesMustBeAnArrayOfRoleContentObjects) {
  EXPECT_THAT(error_of([] { check_messages(ojson::parse(R"({"role": "user"})"), "m.json"); }),
              HasSubstr("m.json: messages must be a JSON array"));
  EXPECT_THAT(error_of([] {
                check_messages(ojson::parse(R"([{"role": "user", "content": "x"}, 3])"), "m.json");
              }),
              HasSubstr("m.json: /1: a message must be an object"));
  EXPECT_THAT(error_of([] { check_messages(ojson::parse(R"([{"content": "x"}])"), "m.json"); }),
              HasSubstr("m.json: /0/role: a message needs a string \"role\""));
  EXPECT_THAT(error_of([] { check_messages(ojson::parse(R"([{"role": "user"}])"), "m.json"); }),
              HasSubstr("m.json: /0: a message needs \"content\""));
  EXPECT_THAT(
      error_of(
          [] { check_messages(ojson::parse(R"([{"role": "user", "content": 5}])"), "m.json"); }),
      HasSubstr("m.json: /0/content: must be a string, null, or a list of parts, got number"));
}

class ChatTemplateCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("draftgate_ct_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  std::string rendered(const std::optional<fs::path>& override_file = std::nullopt) {
    const CheckpointTemplate ct = load_checkpoint_template(dir_, override_file);
    RenderRequest r;
    r.messages = ojson::parse(R"([{"role": "user", "content": "x"}])");
    r.variables = ct.special_tokens;
    return ct.chat_template.render(r);
  }
  fs::path dir_;
};

TEST_F(ChatTemplateCheckpoint, TokenizerConfigStringAndSpecialTokens) {
  write(
      "tokenizer_config.json",
      R"({"chat_template": "{{ bos_token }}|{{ eos_token }}|{{ unk_token is defined }}|{{ additional_special_tokens|length }}",
            "bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>", "unk_token": null,
            "additional_special_tokens": ["<a>", {"content": "<b>"}]})");
  EXPECT_EQ(rendered(), "<s>|</s>|False|2");
  // transformers' special_tokens_map keeps only the tokens that are set: an empty one, or an empty
  // list of additional tokens, is undefined.
  write(
      "tokenizer_config.json",
      R"({"chat_template": "{{ eos_token is defined }}|{{ additional_special_tokens is defined }}",
            "eos_token": "", "additional_special_tokens": []})");
  EXPECT_EQ(rendered(), "False|False");
}

TEST_F(ChatTemplateCheckpoint, ChatTemplateJinjaBesideWinsAndTheFlagWinsOverBoth) {
  write("tokenizer_config.json", R"({"chat_template": "config"})");
  write("chat_template.jinja", "jinja file\n");
  EXPECT_EQ(rendered(), "jinja file");
  write("override.jinja", "override");
  EXPECT_EQ(rendered(dir_ / "override.jinja"), "override");
  // A file inside the directory (its tokenizer.json) finds the same template.
  write("tokenizer.json", "{}");
  EXPECT_EQ(load_checkpoint_template(dir_ / "tokenizer.json", std::nullopt).chat_template.source(),
            "jinja file\n");
}

TEST_F(ChatTemplateCheckpoint, NamedTemplatesTakeDefault) {
  write(
      "tokenizer_config.json",
      R"({"chat_template": [{"name": "tool_use", "template": "tools"}, {"name": "default", "template": "plain"}]})");
  EXPECT_EQ(rendered(), "plain");
  // transformers makes a dict of the list: the last "default" is the one kept.
  write(
      "tokenizer_config.json",
      R"({"chat_template": [{"name": "default", "template": "A"}, {"name": "default", "template": "B"}]})");
  EXPECT_EQ(rendered(), "B");
  write("tokenizer_config.json",
        R"({"chat_template": [{"name": "tool_use", "template": "tools"}]})");
  EXPECT_THAT(error_of([&] { rendered(); }),
              HasSubstr("/chat_template: several named templates and none is \"default\""));
  write("tokenizer_config.json", R"({"chat_template": [{"name": "default"}]})");
  EXPECT_THAT(error_of([&] { rendered(); }),
              HasSubstr("/chat_template/0: must be {\"name\": string, \"template\": string}"));
}

TEST_F(ChatTemplateCheckpoint, NoTemplateIsSaid) {
  write("tokenizer_config.json", R"({"eos_token": "</s>"})");
  EXPECT_THAT(error_of([&] { rendered(); }),
              HasSubstr("/chat_template: this tokenizer has no chat template"));
  fs::remove(dir_ / "tokenizer_config.json");
  EXPECT_THAT(error_of([&] { rendered(); }),
              HasSubstr("no chat template: neither chat_template.jinja nor tokenizer_config.json"));
  write("chat_template.jinja", "bad \xff byte");
  EXPECT_THAT(error_of([&] { rendered(); }),
              HasSubstr("chat_template.jinja: the chat template is not valid UTF-8 at byte 4"));
}

TEST_F(ChatTemplateCheckpoint, MessagesFileKeepsKeyOrderAndRefusesBadBytes) {
  write("m.json", R"([{"role": "user", "content": "x", "z": 1, "a": 2}])");
  const ojson m = read_messages((dir_ / "m.json").string());
  RenderRequest r;
  r.messages = m;
  EXPECT_EQ(ChatTemplate::parse("{{ messages[0]|tojson }}", "t").render(r),
            "{\"role\": \"user\", \"content\": \"x\", \"z\": 1, \"a\": 2}");
  write("bad.json", "[{\"role\": \"user\", \"content\": \"\xc3\"}]");
  EXPECT_THAT(error_of([&] { read_messages((dir_ / "bad.json").string()); }),
              HasSubstr("bad.json: the messages file is not valid UTF-8 at byte 30"));
  write("dup.json", R"([{"role": "user", "role": "system", "content": "x"}])");
  EXPECT_THAT(error_of([&] { read_messages((dir_ / "dup.json").string()); }),
              HasSubstr("dup.json"));
}

}  // namespace
}  // namespace draftgate::chat_template
