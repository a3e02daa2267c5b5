// Python's semantics for the values a chat template computes with (see value.h).

#include "draftgate/template/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "draftgate/tokenizer/unicode.h"

namespace draftgate::chat_template {

void fail(ErrorKind kind, int line, std::string message) {
  throw TemplateError{kind, line, std::move(message)};
}

Value Value::undefined(std::string name) {
  Value v;
  v.undefined_name = std::move(name);
  return v;
}
Value Value::none() {
  Value v;
  v.kind = Kind::kNone;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.kind = Kind::kBool;
  v.b = b;
  return v;
}
Value Value::integer(std::int64_t i) {
  Value v;
  v.kind = Kind::kInt;
  v.i = i;
  return v;
}
Value Value::real(double f) {
  Value v;
  v.kind = Kind::kFloat;
  v.f = f;
  return v;
}
Value Value::string(std::string s, bool markup) {
  Value v;
  v.kind = Kind::kString;
  v.s = std::make_shared<const std::string>(std::move(s));
  v.markup = markup;
  return v;
}
namespace {

void too_deep(int line) {
  fail(ErrorKind::kBound, line,
       "lists, dicts and namespaces nested deeper than " + std::to_string(kMaxNesting));
}

// v's nesting. A list or dict holding no namespace has its depth from when it was made (its
// items cannot change); a namespace, and a container holding one, is looked through, since a
// namespace's members change after the fact. Each container once (`seen`: its depth, or -1 while
// its members are being looked through — a namespace that holds itself).
int nesting_of(const Value& v, int line, std::vector<std::pair<const void*, int>>& seen) {
  const bool is_namespace = v.kind == Value::Kind::kNamespace;
  if (!is_namespace && !v.holds_namespace) return v.depth;
  const void* const id = is_namespace                   ? static_cast<const void*>(v.ns.get())
                         : v.kind == Value::Kind::kList ? static_cast<const void*>(v.list.get())
                                                        : static_cast<const void*>(v.dict.get());
  for (const auto& [seen_id, depth] : seen)
    if (seen_id == id) {
      if (depth < 0) fail(ErrorKind::kUnsupported, line, "a namespace that holds itself");
      return depth;
    }
  seen.emplace_back(id, -1);
  const std::size_t at = seen.size() - 1;
  int depth = 0;
  if (is_namespace)
    for (const auto& member : *v.ns) depth = std::max(depth, nesting_of(member.second, line, seen));
  else if (v.kind == Value::Kind::kList)
    for (const Value& item : *v.list) depth = std::max(depth, nesting_of(item, line, seen));
  else
    for (const auto& item : *v.dict) depth = std::max(depth, nesting_of(item.second, line, seen));
  if (depth + 1 > kMaxNesting) too_deep(line);
  seen[at].second = depth + 1;
  return depth + 1;
}

bool namespace_inside(const Value& item) {
  return item.kind == Value::Kind::kNamespace || item.holds_namespace;
}

}  // namespace

int nesting(const Value& v, int line) {
  std::vector<std::pair<const void*, int>> seen;
  return nesting_of(v, line, seen);
}

Value Value::make_list(List l, bool tuple) {
  Value v;
  for (const Value& item : l) {
    v.depth = std::max(v.depth, nesting(item, 0));
    v.holds_namespace = v.holds_namespace || namespace_inside(item);
  }
  if (++v.depth > kMaxNesting) too_deep(0);
  v.kind = Kind::kList;
  v.list = std::make_shared<const List>(std::move(l));
  v.tuple = tuple;
  return v;
}
Value Value::make_dict(Dict d) {
  Value v;
  for (const auto& item : d) {
    v.depth = std::max(v.depth, nesting(item.second, 0));
    v.holds_namespace = v.holds_namespace || namespace_inside(item.second);
  }
  if (++v.depth > kMaxNesting) too_deep(0);
  v.kind = Kind::kDict;
  v.dict = std::make_shared<const Dict>(std::move(d));
  return v;
}
Value Value::callable(Callable c) {
  Value v;
  v.kind = Kind::kCallable;
  v.call = std::make_shared<const Callable>(std::move(c));
  return v;
}

std::string type_name(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kNone:
      return "NoneType";
    case Value::Kind::kBool:
      return "bool";
    case Value::Kind::kInt:
      return "int";
    case Value::Kind::kFloat:
      return "float";
    case Value::Kind::kString:
      return v.markup ? "Markup" : "str";
    case Value::Kind::kList:
      return v.tuple ? "tuple" : "list";
    case Value::Kind::kDict:
      return "dict";
    case Value::Kind::kNamespace:
      return "Namespace";
    case Value::Kind::kCallable:
      return "function";
  }
  return "object";
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return false;
    case Value::Kind::kBool:
      return v.b;
    case Value::Kind::kInt:
      return v.i != 0;
    case Value::Kind::kFloat:
      return v.f != 0;
    case Value::Kind::kString:
      return !v.s->empty();
    case Value::Kind::kList:
      return !v.list->empty();
    case Value::Kind::kDict:
      return !v.dict->empty();
    case Value::Kind::kNamespace:
    case Value::Kind::kCallable:
      return true;
  }
  return false;
}

// repr(float): the shortest digits that read back to the same double, laid out as Python's
// float_repr_style 'short' does (exponent form below 1e-4 and from 1e16).
std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  int precision = 1;
  for (; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*e", precision - 1, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  // buf is "[-]d.ddde[+-]xx": split digits and exponent.
  std::string s(buf);
  const bool negative = s[0] == '-';
  if (negative) s.erase(0, 1);
  const std::size_t e = s.find('e');
  int exponent = std::atoi(s.c_str() + e + 1);
  std::string digits;
  for (std::size_t k = 0; k < e; ++k)
    if (s[k] != '.') digits += s[k];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out;
  if (exponent < -4 || exponent >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char ex[16];
    std::snprintf(ex, sizeof ex, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += ex;
  } else if (exponent < 0) {
    out = "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  } else {
    const std::size_t int_digits = static_cast<std::size_t>(exponent) + 1;
    if (digits.size() <= int_digits) {
      out = digits + std::string(int_digits - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, int_digits) + "." + digits.substr(int_digits);
    }
  }
  return negative ? "-" + out : out;
}

std::string to_str(const Value& v, int line) {
  switch (v.kind) {
    case Value::Kind::kUndefined:
      return "";
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return v.b ? "True" : "False";
    case Value::Kind::kInt:
      return std::to_string(v.i);
    case Value::Kind::kFloat:
      return float_repr(v.f);
    case Value::Kind::kString:
      return *v.s;
    default:
      break;
  }
  fail(ErrorKind::kUnsupported, line,
       "writing a " + type_name(v) + " as text (Python's repr) is not supported");
}

namespace {

// A number as Python compares it with another: an int exactly (long double holds every int64
// and every double exactly, so an int never rounds to a float it is not equal to).
long double exact(const Value& v) {
  if (v.kind == Value::Kind::kFloat) return v.f;
  return v.kind == Value::Kind::kBool ? v.b : v.i;
}

}  // namespace

bool equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind != Value::Kind::kFloat && b.kind != Value::Kind::kFloat)
      return (a.kind == Value::Kind::kBool ? a.b : a.i) ==
             (b.kind == Value::Kind::kBool ? b.b : b.i);
    return exact(a) == exact(b);
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return *a.s == *b.s;
    case Value::Kind::kList:
      if (a.tuple != b.tuple || a.list->size() != b.list->size()) return false;
      for (std::size_t k = 0; k < a.list->size(); ++k)
        if (!equal((*a.list)[k], (*b.list)[k])) return false;
      return true;
    case Value::Kind::kDict:
      if (a.dict->size() != b.dict->size()) return false;
      for (const auto& entry :
           *a.dict) {  // not a structured binding: C++17 lambdas cannot capture one
        const auto it = std::find_if(b.dict->begin(), b.dict->end(),
                                     [&](const auto& kv) { return kv.first == entry.first; });
        if (it == b.dict->end() || !equal(entry.second, it->second)) return false;
      }
      return true;
    case Value::Kind::kNamespace:
      return a.ns == b.ns;
    case Value::Kind::kCallable:
      return a.call == b.call;
    default:
      return false;
  }
}

bool less(const Value& a, const Value& b, int line) {
  if (a.is_undefined() || b.is_undefined())
    fail(ErrorKind::kRender, line,
         "'" + (a.is_undefined() ? a : b).undefined_name + "' is undefined");
  if (a.is_number() && b.is_number()) {
    if (a.kind != Value::Kind::kFloat && b.kind != Value::Kind::kFloat)
      return (a.kind == Value::Kind::kBool ? a.b : a.i) <
             (b.kind == Value::Kind::kBool ? b.b : b.i);
    return exact(a) < exact(b);
  }
  if (a.is_string() && b.is_string()) return *a.s < *b.s;  // UTF-8 byte order is code point order
  if (a.kind == Value::Kind::kList && b.kind == Value::Kind::kList && a.tuple == b.tuple) {
    const List& x = *a.list;
    const List& y = *b.list;
    for (std::size_t k = 0; k < x.size() && k < y.size(); ++k) {
      if (!equal(x[k], y[k])) return less(x[k], y[k], line);
    }
    return x.size() < y.size();
  }
  fail(ErrorKind::kRender, line,
       "'<' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

bool contains(const Value& haystack, const Value& needle, int line) {
  switch (haystack.kind) {
    case Value::Kind::kString:
      if (!needle.is_string())
        fail(ErrorKind::kRender, line,
             "'in <string>' requires string as left operand, not " + type_name(needle));
      return haystack.s->find(*needle.s) != std::string::npos;
    case Value::Kind::kList:
      return std::any_of(haystack.list->begin(), haystack.list->end(),
                         [&](const Value& x) { return equal(x, needle); });
    case Value::Kind::kDict:
      if (needle.kind == Value::Kind::kList && !needle.tuple)
        fail(ErrorKind::kRender, line, "unhashable type: 'list'");
      return needle.is_string() &&
             std::any_of(haystack.dict->begin(), haystack.dict->end(),
                         [&](const auto& kv) { return kv.first == *needle.s; });
    case Value::Kind::kUndefined:
      return false;  // Undefined iterates as empty
    default:
      fail(ErrorKind::kRender, line,
           "argument of type '" + type_name(haystack) + "' is not iterable");
  }
}

Value from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::integer(j.get<std::int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const auto u = j.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX))
        fail(ErrorKind::kUnsupported, 0, "an integer beyond 64 bits is not supported");
      return Value::integer(static_cast<std::int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::real(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List l;
      for (const auto& x : j) l.push_back(from_json(x));
      return Value::make_list(std::move(l));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      for (auto it = j.begin(); it != j.end(); ++it)
        d.emplace_back(it.key(), from_json(it.value()));
      return Value::make_dict(std::move(d));
    }
    default:
      fail(ErrorKind::kUnsupported, 0, "a binary JSON value is not supported");
  }
}

namespace {

// json.dumps' string encoding: ", \, and control characters escaped; the rest as is, or as
// \uXXXX (surrogate pairs above the BMP) with ensure_ascii.
void dump_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (std::size_t k = 0; k < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[k]);
    char buf[16];
    if (c == '"')
      out += "\\\"";
    else if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\b')
      out += "\\b";
    else if (c == '\f')
      out += "\\f";
    else if (c < 0x20) {
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else if (c >= 0x80 && ensure_ascii) {
      std::size_t len = 0;
      const char32_t cp = tokenizer::decode_utf8(s, k, &len);
      if (cp >= 0x10000) {
        const char32_t v = cp - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                      static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      }
      out += buf;
      k += len;
      continue;
    } else {
      out += static_cast<char>(c);
    }
    ++k;
  }
  out += '"';
}

void dump(std::string& out, const Value& v, const DumpOptions& opt, int depth, int line) {
  const std::string item_sep = opt.separators ? opt.separators->first : (opt.indent ? "," : ", ");
  const std::string key_sep = opt.separators ? opt.separators->second : ": ";
  auto newline = [&](int d) {
    if (!opt.indent) return;
    out += '\n';
    for (int k = 0; k < d; ++k) {
      if (out.size() + opt.indent->size() > kMaxStringBytes)
        fail(ErrorKind::kBound, line,
             "a string grew past " + std::to_string(kMaxStringBytes) + " bytes (tojson)");
      out += *opt.indent;
    }
  };
  switch (v.kind) {
    case Value::Kind::kNone:
      out += "null";
      return;
    case Value::Kind::kBool:
      out += v.b ? "true" : "false";
      return;
    case Value::Kind::kInt:
      out += std::to_string(v.i);
      return;
    case Value::Kind::kFloat:
      out += std::isnan(v.f)   ? "NaN"
             : std::isinf(v.f) ? (v.f > 0 ? "Infinity" : "-Infinity")
                               : float_repr(v.f);
      return;
    case Value::Kind::kString:
      dump_string(out, *v.s, opt.ensure_ascii);
      return;
    case Value::Kind::kList: {
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (std::size_t k = 0; k < v.list->size(); ++k) {
        if (k) out += item_sep;
        newline(depth + 1);
        dump(out, (*v.list)[k], opt, depth + 1, line);
      }
      newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::kDict: {
      if (v.dict->empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& kv : *v.dict) items.push_back(&kv);
      if (opt.sort_keys)
        std::stable_sort(items.begin(), items.end(),
                         [](const auto* a, const auto* b) { return a->first < b->first; });
      out += '{';
      for (std::size_t k = 0; k < items.size(); ++k) {
        if (k) out += item_sep;
        newline(depth + 1);
        dump_string(out, items[k]->first, opt.ensure_ascii);
        out += key_sep;
        dump(out, items[k]->second, opt, depth + 1, line);
      }
      newline(depth);
      out += '}';
      return;
    }
    default:
      fail(ErrorKind::kRender, line,
           "Object of type " + type_name(v) + " is not JSON serializable");
  }
}

}  // namespace

std::string json_dumps(const Value& v, const DumpOptions& opt, int line) {
  std::string out;
  dump(out, v, opt, 0, line);
  return out;
}

bool py_isspace(char32_t c) { return tokenizer::is_white_space(c) || (c >= 0x1c && c <= 0x1f); }

std::u32string to_u32(const std::string& s) {
  std::u32string out;
  for (std::size_t k = 0; k < s.size();) {
    std::size_t len = 0;
    out += tokenizer::decode_utf8(s, k, &len);
    k += len;
  }
  return out;
}

std::string from_u32(const std::u32string& s) {
  std::string out;
  for (const char32_t c : s) tokenizer::append_utf8(out, c);
  return out;
}

}  // namespace draftgate::chat_template
