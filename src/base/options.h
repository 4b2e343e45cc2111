// A verb's options, declared once. The struct of a verb's arguments (tune's TuneArgs, ...) lives in
// the layer that owns the use case and lists its fields through visit(v): v(decl, field) for each
// option, where `decl` names the option's key (Python's keyword, the server's JSON field), its CLI
// flag, help, kind and range (and, when the key is a reserved word in Python, its Python
// spelling: `.py("lam")` for "lambda"), and the field's initial value is its default. Every front
// end takes its spelling from that one list: the CLI binds flags (cli/option_flags.h), Python binds
// keyword arguments and builds the wrapper's signature (python/src/options.cpp,
// ragform._ragform.options), docs/cli.md is generated from the CLI's --help. Validation is
// check_options() below, once, with errors that name the option by its key (OptionError); each
// front end spells the key its way
// (`--budget`, `budget=`, `"budget"`).
//
//   struct Args {
//     size_t budget = 0;
//     template <class V> void visit(V&& v) {
//       v(OptionDecl{"budget", "--budget", "N", "prompts the search may run"}.count(0).need(),
//       budget);
//     }
//   };
//
// The fields a visitor accepts: std::string, bool, int, int64_t, uint64_t, size_t, double, their
// std::optional (unset = the use case decides; `unset` says what it decides, for --help), and
// std::vector<std::string> (a list: a Python list as it is, a CLI flag's text through `split`).
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/error.h"

namespace ragform {

// A bad option value, named by the option's key; what() is "<key>: <why>" (Python's spelling).
class OptionError : public UsageError {
 public:
  OptionError(std::string key, const std::string& why)
      : UsageError(key, why), key_(std::move(key)), why_(why) {}
  const std::string& key() const { return key_; }
  const std::string& why() const { return why_; }

 private:
  std::string key_, why_;
};

enum class OptionKind {
  Count,   // a whole number (size_t, int64_t, uint64_t, int fields)
  Real,    // a finite number (double)
  Text,    // a string
  Switch,  // a bool: a CLI flag without value, a Python bool
  OnOff,   // a bool: the CLI's "on|off" value, a Python bool
  List,    // std::vector<std::string>
};

struct OptionDecl {
  OptionDecl(std::string k, std::string f, std::string m, std::string h)
      : key(std::move(k)), flag(std::move(f)), metavar(std::move(m)), help(std::move(h)) {}
  std::string key;  // "budget": Python's keyword (unless py_key), the server's JSON field
  // Python's keyword when the key is a reserved word there ("lambda" -> "lam"); "" = the key.
  std::string py_key;
  std::string flag;     // "--budget", "-o,--output"; "" = no CLI flag (another front end's only)
  std::string metavar;  // "N"; "" for a switch
  std::string help;
  OptionKind kind = OptionKind::Text;
  bool required = false;
  bool positional = false;  // Python: positional-or-keyword, in declaration order
  double lo = 0, hi = 0;    // numbers: the accepted closed interval (lo > hi: any)
  std::string range_text;   // --help's words for the range ("" = "lo..hi")
  std::string unset;        // optional fields: what unset means, for --help ("6 for abs, else 2")
  // The environment variable the CLI reads it from ("RAGFORM_CPU"; a flag, when there is one,
  // wins over it); "" = none. Only the CLI reads the environment (cli/engine_env.h).
  std::string env;
  // Switch: the flag turns the option off ("--no-special-tokens" for special_tokens = true).
  bool negated = false;
  // A negated switch: what the key's true means, for the front ends that take the key (Python's
  // keyword, the server's field), where `help` (the flag's words: "leave out ...") would say the
  // opposite (issue 40, pass 16). key_help() gives the right one.
  std::string on_help;
  // Text: an empty default is a value (Python's ""), not "not given" (Python's None).
  bool empty_is_value = false;
  // Lists: how the CLI's text becomes values (key, text -> values); null = split at commas.
  std::vector<std::string> (*split)(const std::string& key, const std::string& text) = nullptr;
  // Lists: one value per use of the CLI's flag (repeatable, never split); a Python str is one
  // value, a list many (--stop TEXT, stop="a,b" or stop=[...]).
  bool repeat = false;

  // Builders, so one declaration reads as one line.
  OptionDecl& count(double low, double high = double(std::numeric_limits<int64_t>::max())) {
    kind = OptionKind::Count;
    lo = low, hi = high;
    return *this;
  }
  OptionDecl& real(double low, double high) {
    kind = OptionKind::Real;
    lo = low, hi = high;
    return *this;
  }
  OptionDecl& on_off() {
    kind = OptionKind::OnOff;
    return *this;
  }
  OptionDecl& flag_only() {
    kind = OptionKind::Switch;
    return *this;
  }
  // A bool whose CLI flag (without value) turns it off: Python's special_tokens=False is the
  // CLI's --no-special-tokens. `when_true`: what true means to the key's front ends.
  OptionDecl& flag_off(std::string when_true) {
    kind = OptionKind::Switch;
    negated = true;
    on_help = std::move(when_true);
    return *this;
  }
  // The help of the key (Python, the server): a negated switch's on_help, else the flag's help.
  const std::string& key_help() const { return negated && !on_help.empty() ? on_help : help; }
  OptionDecl& list(std::vector<std::string> (*f)(const std::string&, const std::string&)) {
    kind = OptionKind::List;
    split = f;
    return *this;
  }
  OptionDecl& repeated() {
    kind = OptionKind::List;
    repeat = true;
    return *this;
  }
  OptionDecl& need() {
    required = true;
    return *this;
  }
  OptionDecl& first() {
    positional = true;
    return *this;
  }
  OptionDecl& when_unset(std::string text) {
    unset = std::move(text);
    return *this;
  }
  OptionDecl& range_words(std::string text) {
    range_text = std::move(text);
    return *this;
  }
  OptionDecl& from_env(std::string var) {
    env = std::move(var);
    return *this;
  }
  OptionDecl& empty_value() {
    empty_is_value = true;
    return *this;
  }
  // Python's spelling of the key: `.py("lam")` where the key is a reserved word there.
  OptionDecl& py(std::string k) {
    py_key = std::move(k);
    return *this;
  }
  const std::string& python_key() const { return py_key.empty() ? key : py_key; }
  bool has_range() const { return lo <= hi; }
};

// "0..1", "1 or more": a range in words, as --help shows it.
std::string range_words(const OptionDecl& d);
// A number as the declaration and --help show it ("0.5", "24").
std::string option_number_text(double v);
// Throws OptionError unless lo <= v <= hi (NaN never is), in the CLI's words: "value too large:
// <v> (largest accepted: <hi>)" above, "value out of range: <v> (accepted: <range>)" otherwise.
void check_option_range(const OptionDecl& d, double v);
// The same with the value quoted as the caller wrote it (`text`: a Python int's digits, which a
// double would show as 1e+30).
void check_option_range(const OptionDecl& d, double v, const std::string& text);

// The index of `value` among `choices`, else OptionError "<key>: expected a, b or c, got 'value'"
// (the words of every front end for a value outside a setting's set: kv, truncate, load, ...).
size_t option_choice(const std::string& key, const std::string& value,
                     std::initializer_list<const char*> choices);

// One entry of a verb's declaration as data: what `ragform._ragform.options(verb)` returns and
// what a test compares each front end with. default_text: the initial value ("" for an empty
// string or list; "none" for an unset optional).
struct OptionInfo {
  OptionDecl decl;
  std::string default_text;
  bool is_optional = false;  // a std::optional field: may be None / left unset
};

namespace detail {
inline std::string default_of(const std::string& v) { return v; }
inline std::string default_of(bool v) { return v ? "true" : "false"; }
inline std::string default_of(const std::vector<std::string>& v) {
  std::string t;
  for (const auto& x : v) t += (t.empty() ? "" : ",") + x;
  return t;
}
template <class T>
std::string default_of(const T& v) {
  return option_number_text(double(v));
}
template <class T>
bool is_optional(const T&) {
  return false;
}
template <class T>
bool is_optional(const std::optional<T>&) {
  return true;
}
template <class T>
std::string default_of(const std::optional<T>& v) {
  return v ? default_of(*v) : "none";
}
}  // namespace detail

// The declaration of the arguments struct S, with its defaults, in order.
template <class S>
std::vector<OptionInfo> option_infos() {
  S s;
  std::vector<OptionInfo> out;
  s.visit([&](const OptionDecl& d, const auto& field) {
    out.push_back({d, detail::default_of(field), detail::is_optional(field)});
  });
  return out;
}

// Checks every set numeric field of `s` against its declared range (OptionError naming the key).
template <class S>
void check_options(S& s) {
  s.visit([](const OptionDecl& d, const auto& field) {
    auto check = [&](const auto& v) {
      using V = std::decay_t<decltype(v)>;
      if constexpr (std::is_arithmetic_v<V> && !std::is_same_v<V, bool>)
        if (d.has_range()) check_option_range(d, double(v));
    };
    if constexpr (requires { field.has_value(); }) {
      if (field) check(*field);
    } else {
      check(field);
    }
  });
}

}  // namespace ragform
