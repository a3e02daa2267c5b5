#pragma once
// The values a chat template computes with, as Python and Jinja2 have them: undefined, None, bool,
// int, float, str, list (or tuple), dict (insertion-ordered, string keys), namespace, and
// callables (macros, bound methods, globals). What Python would do with them is done here in one
// place: truthiness, str(), ==, ordering, `in`, json.dumps. Anything outside what draftgate
// implements is a TemplateError of kind kUnsupported, never an approximation.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace draftgate::chat_template {

// What went wrong, for the one-line message: a template the interpreter refuses (syntax, an
// unsupported construct), an error Jinja2 raises while rendering too, raise_exception, a bound.
enum class ErrorKind { kSyntax, kUnsupported, kRender, kRaised, kBound };

// No string a template computes may grow past this (the rendered output has its own, smaller
// bound): a template doubling a string in a loop ends here, not in memory exhaustion.
constexpr std::size_t kMaxStringBytes = 64u << 20;
// A string made into a list (iterated, split, |list) yields at most this many items: each is a
// Value of a few hundred bytes, so a 10 M-character string would take gigabytes before the step
// limit ended a loop over it (Jinja2 iterates a string lazily).
constexpr std::size_t kMaxItemsFromAString = 1u << 20;
// Lists, dicts and namespaces may hold each other this deep, and a template's blocks and
// expressions nest at most this deep: what a template builds or says in a loop ends here (a
// TemplateError of kind kBound), not in the stack's overflow when it is compared, dumped or freed.
constexpr int kMaxNesting = 256;

struct TemplateError {
  ErrorKind kind;
  int line;  // 1-based template line, 0 when none applies
  std::string message;
};

struct Value;
using List = std::vector<Value>;
using Dict = std::vector<std::pair<std::string, Value>>;

struct CallArgs;
using Callable = std::function<Value(const CallArgs&, int line)>;

struct Value {
  enum class Kind {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kNamespace,
    kCallable
  };
  Kind kind = Kind::kUndefined;
  bool b = false;
  std::int64_t i = 0;
  double f = 0;
  std::shared_ptr<const std::string> s;
  // A |safe result (markupsafe.Markup): its operations escape their operands, so all but the
  // harmless ones are refused.
  bool markup = false;
  std::shared_ptr<const List> list;
  bool tuple = false;
  std::shared_ptr<const Dict> dict;
  std::shared_ptr<Dict> ns;  // a namespace() object: the one mutable value
  std::shared_ptr<const Callable> call;
  std::string undefined_name;    // what the undefined value stands for, for the error message
  int depth = 0;                 // a list's or dict's containers nested inside it, itself counted
  bool holds_namespace = false;  // a list or dict with a namespace inside: its depth can grow

  static Value undefined(std::string name = {});
  static Value none();
  static Value boolean(bool v);
  static Value integer(std::int64_t v);
  static Value real(double v);
  static Value string(std::string v, bool markup = false);
  static Value make_list(List v, bool tuple = false);
  static Value make_dict(Dict v);
  static Value callable(Callable c);

  bool is_undefined() const { return kind == Kind::kUndefined; }
  bool is_string() const { return kind == Kind::kString; }
  bool is_number() const {
    return kind == Kind::kInt || kind == Kind::kFloat || kind == Kind::kBool;
  }
  const std::string& str() const { return *s; }
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// How deep v's containers nest (0 for a scalar, 1 for a list of scalars); a namespace's members
// are looked through, each namespace once. Throws kBound past kMaxNesting.
int nesting(const Value& v, int line);

// Python's type name for messages ("str", "dict", ...).
std::string type_name(const Value& v);
// bool(v).
bool truthy(const Value& v);
// str(v): None, True, 1, 1.5 (repr), the text; undefined is "". A list or dict, whose repr
// draftgate does not reproduce, is kUnsupported.
std::string to_str(const Value& v, int line);
// Python's repr of a float.
std::string float_repr(double v);
// a == b.
bool equal(const Value& a, const Value& b);
// a < b (numbers, strings, lists); other pairs are the TypeError Python raises.
bool less(const Value& a, const Value& b, int line);
// `needle in haystack`.
bool contains(const Value& haystack, const Value& needle, int line);

// JSON (ordered as the file has it) to a value, and back with json.dumps' rules.
Value from_json(const nlohmann::ordered_json& j);
struct DumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // None, or the indent string (an int n is n spaces)
  std::optional<std::pair<std::string, std::string>> separators;
  bool sort_keys = false;
};
std::string json_dumps(const Value& v, const DumpOptions& opt, int line);

// Python's str.isspace for one code point.
bool py_isspace(char32_t c);
// The code points of valid UTF-8 text and back.
std::u32string to_u32(const std::string& s);
std::string from_u32(const std::u32string& s);

[[noreturn]] void fail(ErrorKind kind, int line, std::string message);

}  // namespace draftgate::chat_template
