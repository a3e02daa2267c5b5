// Filters, tests, attribute and item access and the str/dict methods, as Jinja2 3.1 and Python
// have them (see builtins.h). Sources: jinja2/filters.py, jinja2/tests.py, jinja2/sandbox.py
// (ImmutableSandboxedEnvironment), jinja2/environment.py (getattr/getitem), and transformers'
// chat_template_utils.py (the tojson override).

#include "draftgate/template/builtins.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace draftgate::chat_template {
namespace {

const Value* arg(const CallArgs& a, std::size_t index, const char* keyword) {
  if (index < a.positional.size()) return &a.positional[index];
  for (const auto& [k, v] : a.keyword)
    if (k == keyword) return &v;
  return nullptr;
}

// Arguments the Python or Jinja2 callee takes that draftgate does not render: a call with them is
// an unsupported construct, not a wrong call.
struct Unrendered {
  std::size_t positional = 0;  // the callee's own most positional arguments
  std::set<std::string> keywords;
};

void check_arity(const CallArgs& a, std::size_t max_positional, std::set<std::string> keywords,
                 const std::string& what, int line, const Unrendered& unrendered = {}) {
  if (a.positional.size() > max_positional)
    fail(
        a.positional.size() <= unrendered.positional ? ErrorKind::kUnsupported : ErrorKind::kRender,
        line,
        what + " takes at most " + std::to_string(max_positional) + " argument(s), got " +
            std::to_string(a.positional.size()));
  for (const auto& [k, v] : a.keyword) {
    if (unrendered.keywords.count(k))
      fail(ErrorKind::kUnsupported, line, what + "(" + k + "=...) is not supported");
    if (!keywords.count(k))
      fail(ErrorKind::kRender, line, what + " got an unexpected keyword argument '" + k + "'");
  }
}

void refuse_markup(const Value& v, const std::string& what, int line) {
  if (v.markup)
    fail(ErrorKind::kUnsupported, line,
         what + " on a |safe (Markup) string, which escapes its operands, is not supported");
}

std::size_t py_len(const Value& v, int line) {
  switch (v.kind) {
    case Value::Kind::kString:
      return to_u32(*v.s).size();
    case Value::Kind::kList:
      return v.list->size();
    case Value::Kind::kDict:
      return v.dict->size();
    case Value::Kind::kUndefined:
      return 0;
    default:
      fail(ErrorKind::kRender, line, "object of type '" + type_name(v) + "' has no len()");
  }
}

std::string ascii_case(const std::string& s, bool upper, int line) {
  std::string out = s;
  for (char& c : out) {
    if (static_cast<unsigned char>(c) >= 0x80)
      fail(ErrorKind::kUnsupported, line, "upper/lower of non-ASCII text is not supported");
    c = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c))
                                : std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

Value tojson(const Value& v, const CallArgs& a, int line) {
  check_arity(a, 4, {"ensure_ascii", "indent", "separators", "sort_keys"}, "tojson", line);
  DumpOptions opt;
  if (const Value* x = arg(a, 0, "ensure_ascii")) opt.ensure_ascii = truthy(*x);
  if (const Value* x = arg(a, 1, "indent")) {
    if (x->kind == Value::Kind::kInt && x->i > static_cast<std::int64_t>(kMaxStringBytes))
      fail(ErrorKind::kBound, line,
           "a string grew past " + std::to_string(kMaxStringBytes) + " bytes (tojson indent " +
               std::to_string(x->i) + ")");
    if (x->kind == Value::Kind::kInt)
      opt.indent = std::string(x->i > 0 ? static_cast<std::size_t>(x->i) : 0, ' ');
    else if (x->is_string())
      opt.indent = *x->s;
    else if (x->kind != Value::Kind::kNone)
      fail(ErrorKind::kUnsupported, line, "tojson indent must be an int or a string");
  }
  if (const Value* x = arg(a, 2, "separators")) {
    if (x->kind == Value::Kind::kList && x->list->size() == 2 && (*x->list)[0].is_string() &&
        (*x->list)[1].is_string())
      opt.separators = std::make_pair(*(*x->list)[0].s, *(*x->list)[1].s);
    else if (x->kind != Value::Kind::kNone)
      fail(ErrorKind::kUnsupported, line, "tojson separators must be two strings");
  }
  if (const Value* x = arg(a, 3, "sort_keys")) opt.sort_keys = truthy(*x);
  return Value::string(json_dumps(v, opt, line));
}

const std::set<std::string> kDictAttributes = {"clear",      "copy",   "fromkeys", "get",
                                               "items",      "keys",   "pop",      "popitem",
                                               "setdefault", "update", "values"};
const std::set<std::string> kListAttributes = {"append", "clear",   "copy",   "count",
                                               "extend", "index",   "insert", "pop",
                                               "remove", "reverse", "sort"};
const std::set<std::string> kStrAttributes = {
    "capitalize",   "casefold",    "center",    "count",      "encode",       "endswith",
    "expandtabs",   "find",        "format",    "format_map", "index",        "isalnum",
    "isalpha",      "isascii",     "isdecimal", "isdigit",    "isidentifier", "islower",
    "isnumeric",    "isprintable", "isspace",   "istitle",    "isupper",      "join",
    "ljust",        "lower",       "lstrip",    "maketrans",  "partition",    "removeprefix",
    "removesuffix", "replace",     "rfind",     "rindex",     "rjust",        "rpartition",
    "rsplit",       "rstrip",      "split",     "splitlines", "startswith",   "strip",
    "swapcase",     "title",       "translate", "upper",      "zfill"};

bool affix_match(const std::string& s, const Value& affix, bool prefix, int line) {
  auto one = [&](const Value& x) {
    if (!x.is_string())
      fail(ErrorKind::kRender, line,
           std::string(prefix ? "startswith" : "endswith") +
               " first arg must be str or a tuple of str, not " + type_name(x));
    const std::string& p = *x.s;
    return p.size() <= s.size() && (prefix ? s.compare(0, p.size(), p) == 0
                                           : s.compare(s.size() - p.size(), p.size(), p) == 0);
  };
  if (affix.kind == Value::Kind::kList && affix.tuple)
    return std::any_of(affix.list->begin(), affix.list->end(), one);
  return one(affix);
}

// kMaxItemsFromAString, for a list being made from a string.
void bound_items(std::size_t items, int line) {
  if (items > kMaxItemsFromAString)
    fail(ErrorKind::kBound, line,
         "a string made into a list of more than " + std::to_string(kMaxItemsFromAString) +
             " items (characters or parts)");
}

Value split(const std::string& s, const CallArgs& a, int line) {
  check_arity(a, 2, {"sep", "maxsplit"}, "split", line);
  const Value* sep = arg(a, 0, "sep");
  const Value* max = arg(a, 1, "maxsplit");
  std::int64_t maxsplit = -1;
  if (max) {
    if (max->kind != Value::Kind::kInt)
      fail(ErrorKind::kRender, line, "maxsplit must be an integer");
    maxsplit = max->i;
  }
  List parts;
  if (!sep || sep->kind == Value::Kind::kNone) {
    // Runs of whitespace; none at either end.
    const std::u32string u = to_u32(s);
    std::size_t k = 0;
    while (k < u.size()) {
      while (k < u.size() && py_isspace(u[k])) ++k;
      if (k == u.size()) break;
      if (maxsplit >= 0 && static_cast<std::int64_t>(parts.size()) == maxsplit) {
        // The rest as it is, trailing whitespace kept (' a b  c '.split(None, 1)[1] is 'b  c ').
        parts.push_back(Value::string(from_u32(u.substr(k))));
        break;
      }
      std::size_t e = k;
      while (e < u.size() && !py_isspace(u[e])) ++e;
      bound_items(parts.size() + 1, line);
      parts.push_back(Value::string(from_u32(u.substr(k, e - k))));
      k = e;
    }
    return Value::make_list(std::move(parts));
  }
  if (!sep->is_string())
    fail(ErrorKind::kRender, line, "must be str or None, not " + type_name(*sep));
  const std::string& d = *sep->s;
  if (d.empty()) fail(ErrorKind::kRender, line, "empty separator");
  std::size_t start = 0;
  for (;;) {
    const std::size_t at = s.find(d, start);
    if (at == std::string::npos ||
        (maxsplit >= 0 && static_cast<std::int64_t>(parts.size()) == maxsplit))
      break;
    bound_items(parts.size() + 2, line);
    parts.push_back(Value::string(s.substr(start, at - start)));
    start = at + d.size();
  }
  parts.push_back(Value::string(s.substr(start)));
  return Value::make_list(std::move(parts));
}

Value replace(const std::string& s, const CallArgs& a, int line) {
  check_arity(a, 3, {}, "replace", line);
  if (a.positional.size() < 2)
    fail(ErrorKind::kRender, line, "replace expected at least 2 arguments");
  const Value& from = a.positional[0];
  const Value& to = a.positional[1];
  if (!from.is_string() || !to.is_string())
    fail(ErrorKind::kRender, line, "replace() arguments must be str");
  if (from.s->empty())
    fail(ErrorKind::kUnsupported, line, "replace() of the empty string is not supported");
  std::int64_t count = -1;
  if (a.positional.size() == 3) {
    if (a.positional[2].kind != Value::Kind::kInt)
      fail(ErrorKind::kRender, line, "replace() count must be an integer");
    count = a.positional[2].i;
  }
  std::string out;
  std::size_t start = 0;
  for (std::int64_t n = 0; count < 0 || n < count; ++n) {
    const std::size_t at = s.find(*from.s, start);
    if (at == std::string::npos) break;
    out += s.substr(start, at - start);
    out += *to.s;
    start = at + from.s->size();
    if (out.size() > kMaxStringBytes)
      fail(ErrorKind::kBound, line,
           "a string grew past " + std::to_string(kMaxStringBytes) + " bytes");
  }
  out += s.substr(start);
  return Value::string(std::move(out));
}

// A str method bound to its string.
Value str_method(const Value& self, const std::string& name, int line) {
  const std::string s = *self.s;
  return Value::callable(
      [s, name, markup = self.markup](const CallArgs& a, int call_line) -> Value {
        if (markup)
          fail(ErrorKind::kUnsupported, call_line,
               "calling ." + name + "() on a |safe (Markup) string is not supported");
        if (name == "startswith" || name == "endswith") {
          check_arity(a, 1, {}, name, call_line, {/*start, end*/ 3, {}});
          if (a.positional.empty())
            fail(ErrorKind::kRender, call_line, name + " takes at least 1 argument");
          return Value::boolean(affix_match(s, a.positional[0], name == "startswith", call_line));
        }
        if (name == "strip" || name == "lstrip" || name == "rstrip") {
          check_arity(a, 1, {}, name, call_line);
          const Value chars = a.positional.empty() ? Value::none() : a.positional[0];
          return Value::string(py_strip(s, chars, name != "rstrip", name != "lstrip", call_line));
        }
        if (name == "split") return split(s, a, call_line);
        if (name == "replace") return replace(s, a, call_line);
        if (name == "upper" || name == "lower") {
          check_arity(a, 0, {}, name, call_line);
          return Value::string(ascii_case(s, name == "upper", call_line));
        }
        fail(ErrorKind::kUnsupported, call_line, "the str method ." + name + "() is not supported");
      });
}

Value dict_method(const Value& self, const std::string& name, int line) {
  if (name != "get" && name != "items" && name != "keys" && name != "values")
    fail(ErrorKind::kUnsupported, line, "the dict method ." + name + "() is not supported");
  return Value::callable([d = self.dict, name](const CallArgs& a, int call_line) -> Value {
    if (name == "get") {
      check_arity(a, 2, {}, "get", call_line);
      if (a.positional.empty())
        fail(ErrorKind::kRender, call_line, "get expected at least 1 argument");
      const Value& key = a.positional[0];
      if (key.is_string())
        for (const auto& kv : *d)
          if (kv.first == *key.s) return kv.second;
      return a.positional.size() == 2 ? a.positional[1] : Value::none();
    }
    check_arity(a, 0, {}, name, call_line);
    List out;
    for (const auto& [k, v] : *d) {
      if (name == "items")
        out.push_back(Value::make_list({Value::string(k), v}, true));
      else if (name == "keys")
        out.push_back(Value::string(k));
      else
        out.push_back(v);
    }
    return Value::make_list(std::move(out));
  });
}

// Python's slice.indices for a sequence of `length`.
void slice_indices(std::int64_t length, const Value& start, const Value& stop, const Value& step,
                   std::int64_t* b, std::int64_t* e, std::int64_t* st, int line) {
  auto as_int = [&](const Value& v, const char* what) -> std::optional<std::int64_t> {
    if (v.is_undefined() || v.kind == Value::Kind::kNone) return std::nullopt;
    if (v.kind == Value::Kind::kInt) return v.i;
    if (v.kind == Value::Kind::kBool) return v.b ? 1 : 0;
    fail(ErrorKind::kRender, line, std::string("slice ") + what + " must be an integer or None");
  };
  const auto s = as_int(step, "step");
  *st = s.value_or(1);
  if (*st == 0) fail(ErrorKind::kRender, line, "slice step cannot be zero");
  auto clamp = [&](std::optional<std::int64_t> v, bool is_start) {
    if (!v) return *st > 0 ? (is_start ? 0 : length) : (is_start ? length - 1 : -1);
    std::int64_t x = *v;
    if (x < 0) {
      x += length;
      if (x < 0) x = *st > 0 ? 0 : -1;
    } else if (x >= length) {
      x = *st > 0 ? length : length - 1;
    }
    return x;
  };
  *b = clamp(as_int(start, "start"), true);
  *e = clamp(as_int(stop, "stop"), false);
}

}  // namespace

List iterate(const Value& v, int line) {
  switch (v.kind) {
    case Value::Kind::kList:
      return *v.list;
    case Value::Kind::kDict: {
      List keys;
      for (const auto& kv : *v.dict) keys.push_back(Value::string(kv.first));
      return keys;
    }
    case Value::Kind::kString: {
      List chars;
      const std::u32string u = to_u32(*v.s);
      bound_items(u.size(), line);
      for (const char32_t c : u) chars.push_back(Value::string(from_u32(std::u32string(1, c))));
      return chars;
    }
    case Value::Kind::kUndefined:
      return {};
    default:
      fail(ErrorKind::kRender, line, "'" + type_name(v) + "' object is not iterable");
  }
}

std::string py_strip(const std::string& s, const Value& chars, bool left, bool right, int line) {
  std::u32string set;
  const bool whitespace = chars.kind == Value::Kind::kNone || chars.is_undefined();
  if (!whitespace) {
    if (!chars.is_string()) fail(ErrorKind::kRender, line, "strip arg must be None or str");
    set = to_u32(*chars.s);
  }
  const std::u32string u = to_u32(s);
  auto strip_it = [&](char32_t c) {
    return whitespace ? py_isspace(c) : set.find(c) != std::u32string::npos;
  };
  std::size_t b = 0;
  std::size_t e = u.size();
  if (left)
    while (b < e && strip_it(u[b])) ++b;
  if (right)
    while (e > b && strip_it(u[e - 1])) --e;
  return from_u32(u.substr(b, e - b));
}

Value get_attribute(const Value& obj, const std::string& name, int line) {
  if (!name.empty() && name[0] == '_')
    fail(ErrorKind::kUnsupported, line,
         "access to the attribute '" + name + "' is unsafe (sandbox)");
  switch (obj.kind) {
    case Value::Kind::kUndefined:
      fail(ErrorKind::kRender, line,
           "'" + obj.undefined_name + "' is undefined (reading ." + name + ")");
    case Value::Kind::kDict:
      if (kDictAttributes.count(name)) return dict_method(obj, name, line);
      for (const auto& kv : *obj.dict)
        if (kv.first == name) return kv.second;
      return Value::undefined(name);
    case Value::Kind::kNamespace:
      for (const auto& kv : *obj.ns)
        if (kv.first == name) return kv.second;
      return Value::undefined(name);
    case Value::Kind::kString:
      if (kStrAttributes.count(name)) return str_method(obj, name, line);
      return Value::undefined(name);
    case Value::Kind::kList:
      if (kListAttributes.count(name))
        fail(ErrorKind::kUnsupported, line, "the list method ." + name + "() is not supported");
      return Value::undefined(name);
    case Value::Kind::kNone:
      return Value::undefined(name);
    default:
      fail(ErrorKind::kUnsupported, line,
           "attributes of a " + type_name(obj) + " are not supported");
  }
}

Value get_item(const Value& obj, const Value& key, int line) {
  if (obj.is_undefined())
    fail(ErrorKind::kRender, line, "'" + obj.undefined_name + "' is undefined (reading [...])");
  const bool int_key = key.kind == Value::Kind::kInt || key.kind == Value::Kind::kBool;
  if ((obj.kind == Value::Kind::kList || obj.is_string()) && int_key) {
    const std::int64_t k = key.kind == Value::Kind::kBool ? key.b : key.i;
    if (obj.is_string()) {
      refuse_markup(obj, "indexing", line);
      const std::u32string u = to_u32(*obj.s);
      const std::int64_t n = static_cast<std::int64_t>(u.size());
      const std::int64_t at = k < 0 ? k + n : k;
      if (at < 0 || at >= n) return Value::undefined("[" + std::to_string(k) + "]");
      return Value::string(from_u32(u.substr(static_cast<std::size_t>(at), 1)));
    }
    const std::int64_t n = static_cast<std::int64_t>(obj.list->size());
    const std::int64_t at = k < 0 ? k + n : k;
    if (at < 0 || at >= n) return Value::undefined("[" + std::to_string(k) + "]");
    return (*obj.list)[static_cast<std::size_t>(at)];
  }
  if (obj.kind == Value::Kind::kDict && key.is_string()) {
    for (const auto& kv : *obj.dict)
      if (kv.first == *key.s) return kv.second;
  }
  // environment.getitem falls back to the attribute of that name.
  if (key.is_string() && obj.kind != Value::Kind::kNone) return get_attribute(obj, *key.s, line);
  if (obj.kind == Value::Kind::kDict && key.kind == Value::Kind::kList && !key.tuple)
    fail(ErrorKind::kRender, line, "unhashable type: 'list'");
  return Value::undefined("[]");
}

Value slice_of(const Value& obj, const Value& start, const Value& stop, const Value& step,
               int line) {
  if (obj.is_undefined())
    fail(ErrorKind::kRender, line, "'" + obj.undefined_name + "' is undefined (slicing)");
  if (obj.kind != Value::Kind::kList && !obj.is_string())
    fail(ErrorKind::kUnsupported, line, "slicing a " + type_name(obj) + " is not supported");
  if (obj.is_string()) refuse_markup(obj, "slicing", line);
  const std::u32string u = obj.is_string() ? to_u32(*obj.s) : std::u32string();
  const std::int64_t n = obj.is_string() ? static_cast<std::int64_t>(u.size())
                                         : static_cast<std::int64_t>(obj.list->size());
  std::int64_t b = 0, e = 0, st = 1;
  slice_indices(n, start, stop, step, &b, &e, &st, line);
  std::u32string su;
  List sl;
  for (std::int64_t k = b; st > 0 ? k < e : k > e; k += st) {
    if (obj.is_string())
      su += u[static_cast<std::size_t>(k)];
    else
      sl.push_back((*obj.list)[static_cast<std::size_t>(k)]);
  }
  return obj.is_string() ? Value::string(from_u32(su)) : Value::make_list(std::move(sl), obj.tuple);
}

Value apply_filter(const std::string& name, const Value& v, const CallArgs& a, int line) {
  static const std::set<std::string> kMarkupSafe = {"safe",    "string", "length", "count",
                                                    "default", "d",      "trim",   "tojson"};
  if (!kMarkupSafe.count(name)) refuse_markup(v, "|" + name, line);
  if (name == "length" || name == "count") {
    check_arity(a, 0, {}, name, line);
    return Value::integer(static_cast<std::int64_t>(py_len(v, line)));
  }
  if (name == "trim") {
    check_arity(a, 1, {"chars"}, name, line);
    const Value* chars = arg(a, 0, "chars");
    return Value::string(
        py_strip(to_str(v, line), chars ? *chars : Value::none(), true, true, line), v.markup);
  }
  if (name == "tojson") return tojson(v, a, line);
  if (name == "items") {
    check_arity(a, 0, {}, name, line);
    if (v.is_undefined()) return Value::make_list({});
    if (v.kind != Value::Kind::kDict)
      fail(ErrorKind::kRender, line, "Can only get item pairs from a mapping.");
    List out;
    for (const auto& [k, x] : *v.dict) out.push_back(Value::make_list({Value::string(k), x}, true));
    return Value::make_list(std::move(out));
  }
  if (name == "safe") {
    check_arity(a, 0, {}, name, line);
    return Value::string(to_str(v, line), true);
  }
  if (name == "string") {
    check_arity(a, 0, {}, name, line);
    return v.is_string() ? v : Value::string(to_str(v, line));
  }
  if (name == "list") {
    check_arity(a, 0, {}, name, line);
    return Value::make_list(iterate(v, line));
  }
  if (name == "first" || name == "last") {
    check_arity(a, 0, {}, name, line);
    const List items = iterate(v, line);
    if (items.empty()) return Value::undefined("No " + name + " item, sequence was empty.");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "join") {
    check_arity(a, 1, {"d"}, name, line, {1, {"attribute"}});
    const Value* d = arg(a, 0, "d");
    const std::string sep = d ? to_str(*d, line) : "";
    if (d && d->markup) refuse_markup(*d, "|join", line);
    std::string out;
    const List items = iterate(v, line);
    for (std::size_t k = 0; k < items.size(); ++k) {
      if (items[k].markup) refuse_markup(items[k], "|join", line);
      if (k) out += sep;
      out += to_str(items[k], line);
      if (out.size() > kMaxStringBytes)
        fail(ErrorKind::kBound, line,
             "a string grew past " + std::to_string(kMaxStringBytes) + " bytes");
    }
    return Value::string(std::move(out));
  }
  if (name == "upper" || name == "lower") {
    check_arity(a, 0, {}, name, line);
    return Value::string(ascii_case(to_str(v, line), name == "upper", line));
  }
  if (name == "default" || name == "d") {
    check_arity(a, 2, {"default_value", "boolean"}, name, line);
    const Value* def = arg(a, 0, "default_value");
    const Value* boolean = arg(a, 1, "boolean");
    const bool use = v.is_undefined() || (boolean && truthy(*boolean) && !truthy(v));
    if (!use) return v;
    return def ? *def : Value::string("");
  }
  if (name == "reverse") {
    check_arity(a, 0, {}, name, line);
    if (v.is_string()) {
      std::u32string u = to_u32(*v.s);
      std::reverse(u.begin(), u.end());
      return Value::string(from_u32(u));
    }
    List items = iterate(v, line);
    std::reverse(items.begin(), items.end());
    return Value::make_list(std::move(items));
  }
  if (name == "abs") {
    check_arity(a, 0, {}, name, line);
    if (v.kind == Value::Kind::kInt) {
      if (v.i == std::numeric_limits<std::int64_t>::min())
        fail(ErrorKind::kUnsupported, line, "an integer beyond 64 bits is not supported");
      return Value::integer(v.i < 0 ? -v.i : v.i);
    }
    if (v.kind == Value::Kind::kBool) return Value::integer(v.b);
    if (v.kind == Value::Kind::kFloat) return Value::real(std::fabs(v.f));
    fail(ErrorKind::kRender, line, "bad operand type for abs(): '" + type_name(v) + "'");
  }
  fail(ErrorKind::kUnsupported, line, "the '" + name + "' filter is not supported");
}

bool apply_test(const std::string& name, const Value& v, const CallArgs& a, int line) {
  check_arity(a, 0, {}, "test '" + name + "'", line);
  using K = Value::Kind;
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.kind == K::kNone;
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.kind == K::kDict;
  if (name == "iterable" || name == "sequence")
    return v.kind == K::kString || v.kind == K::kList || v.kind == K::kDict ||
           v.kind == K::kUndefined;
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind == K::kInt;
  if (name == "float") return v.kind == K::kFloat;
  if (name == "boolean") return v.kind == K::kBool;
  if (name == "true") return v.kind == K::kBool && v.b;
  if (name == "false") return v.kind == K::kBool && !v.b;
  if (name == "odd" || name == "even") {
    if (v.kind != K::kInt && v.kind != K::kBool)
      fail(ErrorKind::kUnsupported, line, "odd/even of a " + type_name(v) + " is not supported");
    const std::int64_t x = v.kind == K::kBool ? v.b : v.i;
    return ((x % 2 + 2) % 2 == 1) == (name == "odd");
  }
  fail(ErrorKind::kUnsupported, line, "the '" + name + "' test is not supported");
}

}  // namespace draftgate::chat_template
