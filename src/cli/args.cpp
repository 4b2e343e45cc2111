#include "cli/args.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <sstream>
#include <thread>
#include <type_traits>

#include "base/error.h"
#include "base/number_text.h"

namespace ragform::cli {

namespace {
std::vector<std::string> split_names(const std::string& names) {
  std::vector<std::string> out;
  std::stringstream ss(names);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}

template <typename T>
std::string show_default(const T& v) {
  std::ostringstream ss;
  ss << v;
  return ss.str();
}

// A value above the flag's range, or above its type's (a 20-digit -n): "too large" with the
// largest value accepted, which says more than a range whose upper end is the type's limit.
template <typename T>
[[noreturn]] void too_large(const std::string& flag, const std::string& text, T hi) {
  throw UsageError(flag,
                   "value too large: " + text + " (largest accepted: " + show_default(hi) + ")");
}

}  // namespace

template <typename T>
std::string describe_range(T lo, T hi) {
  // The largest int is no bound worth printing either for a wider field (a declared count's
  // upper end, base/options.h range_words): the same words as Python's for the same refusal.
  const bool open_hi = hi == std::numeric_limits<T>::max() ||
                       (std::is_integral_v<T> && hi == T(std::numeric_limits<int>::max()));
  const bool open_lo = lo == std::numeric_limits<T>::lowest();
  if (open_hi && open_lo) return "any value";
  if (open_hi) return show_default(lo) + " or more";
  if (open_lo) return "at most " + show_default(hi);
  return show_default(lo) + ".." + show_default(hi);
}
template std::string describe_range<int>(int, int);
template std::string describe_range<long long>(long long, long long);
template std::string describe_range<double>(double, double);

template <typename T>
T parse_number(const std::string& flag, const std::string& text, T lo, T hi) {
  T v{};
  errno = 0;
  char* end = nullptr;
  if constexpr (std::is_same_v<T, double>) {
    // One decimal grammar (base/number_text.h): no hex, no leading space; "nan", "inf" and an
    // overflow are values no temperature, weight or fraction can take.
    if (!is_decimal_number(text) && !is_non_finite_word(text))
      throw UsageError(flag, "expected a number, got '" + text + "'");
    const std::optional<double> d = parse_decimal(text);
    if (!d) throw UsageError(flag, "expected a finite number, got '" + text + "'");
    v = *d;
  } else {
    long long w = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || std::isspace(static_cast<unsigned char>(text[0])))
      throw UsageError(flag, "expected an integer, got '" + text + "'");
    // strtoll saturates to the sign's extreme with ERANGE.
    const bool above =
        (errno == ERANGE && w > 0) || w > static_cast<long long>(std::numeric_limits<T>::max());
    const bool below =
        (errno == ERANGE && w < 0) || w < static_cast<long long>(std::numeric_limits<T>::lowest());
    if (above) too_large(flag, text, hi);
    if (below)
      throw UsageError(
          flag, "value out of range: " + text + " (accepted: " + describe_range(lo, hi) + ")");
    v = static_cast<T>(w);
  }
  if (v > hi) too_large(flag, text, hi);
  if (v < lo)
    throw UsageError(flag,
                     "value out of range: " + text + " (accepted: " + describe_range(lo, hi) + ")");
  return v;
}

template int parse_number<int>(const std::string&, const std::string&, int, int);
template long long parse_number<long long>(const std::string&, const std::string&, long long,
                                           long long);
template double parse_number<double>(const std::string&, const std::string&, double, double);

std::string OptBase::display_names() const {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  if (!metavar.empty()) s += " " + metavar;
  return s;
}

template <>
void Opt<std::string>::set(const std::string&, const std::string& text) {
  value = text;
}
template <>
void Opt<int>::set(const std::string& flag, const std::string& text) {
  value = parse_number(flag, text, lo, hi);
}
template <>
void Opt<long long>::set(const std::string& flag, const std::string& text) {
  value = parse_number(flag, text, lo, hi);
}
template <>
void Opt<double>::set(const std::string& flag, const std::string& text) {
  value = parse_number(flag, text, lo, hi);
}
template <>
void Opt<std::vector<std::string>>::set(const std::string&, const std::string& text) {
  value.push_back(text);  // repeatable flag
}

Args::Args(std::string command, std::string summary, std::string details)
    : command_(std::move(command)), summary_(std::move(summary)), details_(std::move(details)) {}

template <typename T>
Opt<T>& Args::opt(const std::string& names, const std::string& metavar, const std::string& help,
                  T def) {
  auto o = std::make_unique<Opt<T>>();
  o->names = split_names(names);
  o->metavar = metavar;
  o->help = help;
  o->value = def;
  if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    o->default_text = "";
  } else if constexpr (std::is_same_v<T, std::string>) {
    o->default_text = def;
  } else {
    o->default_text = show_default(def);
  }
  auto& ref = *o;
  opts_.push_back(std::move(o));
  return ref;
}

template Opt<std::string>& Args::opt(const std::string&, const std::string&, const std::string&,
                                     std::string);
template Opt<int>& Args::opt(const std::string&, const std::string&, const std::string&, int);
template Opt<long long>& Args::opt(const std::string&, const std::string&, const std::string&,
                                   long long);
template Opt<double>& Args::opt(const std::string&, const std::string&, const std::string&, double);
template Opt<std::vector<std::string>>& Args::opt(const std::string&, const std::string&,
                                                  const std::string&, std::vector<std::string>);

Flag& Args::flag(const std::string& names, const std::string& help) {
  auto f = std::make_unique<Flag>();
  f->names = split_names(names);
  f->help = help;
  auto& ref = *f;
  opts_.push_back(std::move(f));
  return ref;
}

Positional& Args::positional(const std::string& name, const std::string& help, bool required) {
  auto p = std::make_unique<Positional>();
  p->name = name;
  p->help = help;
  p->is_required = required;
  auto& ref = *p;
  positionals_.push_back(std::move(p));
  return ref;
}

OptBase* Args::find(const std::string& name) const {
  for (auto& o : opts_)
    for (auto& n : o->names)
      if (n == name) return o.get();
  return nullptr;
}

bool Args::parse(const std::vector<std::string>& argv) {
  size_t next_pos = 0;
  bool only_positional = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string a = argv[i];
    if (!only_positional && (a == "-h" || a == "--help")) {
      std::fputs(help_text().c_str(), stdout);
      return false;
    }
    if (!only_positional && a == "--") {
      only_positional = true;
      continue;
    }
    if (!only_positional && a.size() > 1 && a[0] == '-' &&
        !(a.size() > 1 && (std::isdigit((unsigned char)a[1]) || a[1] == '.'))) {
      std::string name = a, inline_value;
      bool has_inline = false;
      if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
        name = a.substr(0, eq);
        inline_value = a.substr(eq + 1);
        has_inline = true;
      }
      OptBase* o = find(name);
      if (!o)
        throw UsageError(command_,
                         "unknown option '" + name + "' (see ragform " + command_ + " --help)");
      if (dynamic_cast<Flag*>(o)) {
        if (has_inline) throw UsageError(name, "takes no value");
        o->set(name, "");
      } else {
        std::string v;
        if (has_inline) {
          v = inline_value;
        } else {
          if (i + 1 >= argv.size()) throw UsageError(name, "needs a value (" + o->metavar + ")");
          v = argv[++i];
        }
        o->set(name, v);
      }
      o->seen = true;
      continue;
    }
    if (next_pos >= positionals_.size())
      throw UsageError(command_,
                       "unexpected argument '" + a + "' (see ragform " + command_ + " --help)");
    positionals_[next_pos++]->value = a;
  }
  for (auto& o : opts_)
    if (o->is_required && !o->seen)
      throw UsageError(command_, "missing required option " + o->names.back());
  for (auto& p : positionals_)
    if (p->is_required && !p->value) throw UsageError(command_, "missing argument " + p->name);
  return true;
}

std::string Args::help_text() const {
  std::ostringstream s;
  s << "usage: ragform " << command_;
  for (auto& p : positionals_) s << (p->is_required ? " " + p->name : " [" + p->name + "]");
  if (!opts_.empty()) s << " [options]";
  s << "\n\n" << summary_ << "\n";
  if (!details_.empty()) s << "\n" << details_ << "\n";
  if (!positionals_.empty()) {
    s << "\narguments:\n";
    for (auto& p : positionals_)
      s << "  " << p->name << std::string(p->name.size() < 26 ? 26 - p->name.size() : 1, ' ')
        << p->help << "\n";
  }
  s << "\noptions:\n";
  for (auto& o : opts_) {
    std::string left = o->display_names();
    std::string right = o->help;
    std::string range = o->range_text == "any value" ? "" : o->range_text;
    if (o->is_required)
      right += " (required)";
    else if (!o->default_text.empty())
      right += " [default: " + o->default_text + (range.empty() ? "" : "; " + range) + "]";
    else if (!range.empty())
      right += " [" + range + "]";
    s << "  " << left << std::string(left.size() < 26 ? 26 - left.size() : 1, ' ') << right << "\n";
  }
  s << "  -h, --help                show this help\n";
  return s.str();
}

std::vector<int> parse_int_list(const std::string& flag, const std::string& text, int lo, int hi) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(parse_number(flag, item, lo, hi));
  if (out.empty()) throw UsageError(flag, "expected a comma-separated list of integers");
  return out;
}

std::vector<double> parse_number_list(const std::string& flag, const std::string& text, double lo,
                                      double hi) {
  std::vector<double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(parse_number(flag, item, lo, hi));
  if (out.empty()) throw UsageError(flag, "expected a comma-separated list of numbers");
  return out;
}

}  // namespace ragform::cli
