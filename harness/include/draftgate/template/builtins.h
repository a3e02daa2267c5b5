#pragma once
// What a template can do to a value besides operators: the filters and tests it names
// (jinja2/filters.py, jinja2/tests.py, with transformers' own tojson), attribute and item access
// as the sandbox resolves them (jinja2/sandbox.py: dict and str methods first, then keys), and
// the str and dict methods a chat template calls. Each follows the Python it stands for; a
// method or argument form outside that is kUnsupported.

#include <string>

#include "draftgate/template/value.h"

namespace draftgate::chat_template {

// list(v): the items iteration gives (a dict's keys, a string's code points, nothing for an
// undefined value).
List iterate(const Value& v, int line);

Value apply_filter(const std::string& name, const Value& subject, const CallArgs& args, int line);
bool apply_test(const std::string& name, const Value& subject, const CallArgs& args, int line);

// obj.name and obj[key] (key may be a slice: a list of three ints-or-None with `tuple` unset
// is not a slice; slices come through slice_of).
Value get_attribute(const Value& obj, const std::string& name, int line);
Value get_item(const Value& obj, const Value& key, int line);
// obj[start:stop:step] for a list, tuple or str; absent parts are undefined values.
Value slice_of(const Value& obj, const Value& start, const Value& stop, const Value& step,
               int line);

// Python's str.strip family on code points: `chars` empty-optional means whitespace.
std::string py_strip(const std::string& s, const Value& chars, bool left, bool right, int line);

}  // namespace draftgate::chat_template
