// The CLI's spelling of a verb's declared options (base/options.h): one flag per declaration that
// names a flag, with the declaration's help, range and the field's initial value as its default;
// after Args::parse, apply() writes what the command line gave into the struct. An OptionError
// from the use case (named by key) becomes a UsageError naming the flag (spell()).
//
//   TuneArgs ta;
//   OptionFlags<TuneArgs> flags(a, ta);
//   if (!a.parse(argv)) return 0;
//   flags.apply();
#pragma once
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "base/error.h"
#include "base/options.h"
#include "cli/args.h"

namespace ragform::cli {

// "a,b,c" -> {"a", "b", "c"} (a list declared without its own split).
std::vector<std::string> split_commas(const std::string& key, const std::string& text);

inline constexpr long long kMaxLongLong = std::numeric_limits<long long>::max();

template <class S>
class OptionFlags {
 public:
  OptionFlags(Args& a, S& s) {
    s.visit([&](const OptionDecl& d, auto& field) { bind(a, d, field); });
  }

  // Writes every flag the command line gave (and every non-optional field's default) into the
  // struct. OnOff flags are checked here ("on" or "off", else a UsageError naming the flag).
  void apply() {
    for (auto& f : apply_) f();
  }

  // Whether the command line gave the option `key`.
  bool seen(const std::string& key) const {
    auto it = opts_.find(key);
    return it != opts_.end() && it->second->seen;
  }
  // The flag that spells `key` ("--budget"); the key itself when it has none.
  std::string flag_of(const std::string& key) const {
    auto it = opts_.find(key);
    return it == opts_.end() ? key : it->second->names.back();
  }
  // The flag bound to `key`, as parsed (an Opt<long long> for a whole number, Opt<double>,
  // Opt<std::string> or Flag): for a caller that reads the flag itself.
  template <class O>
  const O& option(const std::string& key) const {
    return dynamic_cast<const O&>(*opts_.at(key));
  }
  // The use case's OptionError as the CLI says it: the flag, then why.
  UsageError spell(const OptionError& e) const { return UsageError(flag_of(e.key()), e.why()); }

 private:
  template <class T>
  static constexpr bool kWhole = std::is_integral_v<T> && !std::is_same_v<T, bool>;

  template <class F>
  void bind(Args& a, const OptionDecl& d, F& field) {
    if (d.flag.empty()) return;
    using T = std::remove_cvref_t<F>;
    if constexpr (requires { typename T::value_type; } && !std::is_same_v<T, std::string> &&
                  !std::is_same_v<T, std::vector<std::string>>) {
      // std::optional<U>: the flag's value only when the command line gives it.
      using U = typename T::value_type;
      U shown{};
      if (field) shown = *field;
      bind_value<U>(
          a, d, shown, [&field](const U& v) { field = v; }, /*always=*/false);
      if (!field && !d.unset.empty()) opts_[d.key]->default_text = d.unset;
    } else {
      bind_value<T>(
          a, d, field, [&field](const T& v) { field = v; }, /*always=*/true);
    }
  }

  template <class T, class Set>
  void bind_value(Args& a, const OptionDecl& d, const T& initial, Set set, bool always) {
    if constexpr (std::is_same_v<T, bool>) {
      if (d.kind == OptionKind::OnOff) {
        auto& o = a.opt<std::string>(d.flag, d.metavar.empty() ? "on|off" : d.metavar, d.help,
                                     initial ? "on" : "off");
        finish(d, o);
        apply_.push_back([&o, set, always, key = d.flag] {
          if (!always && !o.seen) return;
          if (o.value != "on" && o.value != "off")
            throw UsageError(key, "on or off, got '" + o.value + "'");
          set(o.value == "on");
        });
      } else {
        // A negated switch (--no-special-tokens) sets false when given.
        auto& o = a.flag(d.flag, d.help);
        opts_[d.key] = &o;
        apply_.push_back([&o, set, always, negated = d.negated, initial] {
          if (o.seen)
            set(!negated);
          else if (always)
            set(negated && initial);
        });
      }
    } else if constexpr (std::is_same_v<T, std::string>) {
      auto& o = a.opt<std::string>(d.flag, d.metavar, d.help, initial);
      finish(d, o);
      apply_.push_back([&o, set, always] {
        if (always || o.seen) set(o.value);
      });
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      if (d.repeat) {  // --stop A --stop B: one value each
        auto& o = a.opt<std::vector<std::string>>(d.flag, d.metavar, d.help, initial);
        finish(d, o);
        apply_.push_back([&o, set] {
          if (o.seen) set(o.value);
        });
        return;
      }
      // --help shows the default list as the flag would spell it ("all", "a,b").
      auto& o = a.opt<std::string>(d.flag, d.metavar, d.help, detail::default_of(initial));
      finish(d, o);
      auto split = d.split ? d.split : &split_commas;
      apply_.push_back([&o, set, split, key = d.key] {
        if (o.seen) set(split(key, o.value));
      });
    } else if constexpr (std::is_floating_point_v<T>) {
      auto& o = a.opt<double>(d.flag, d.metavar, d.help, double(initial));
      if (d.has_range()) o.range(d.lo, d.hi, range_words(d));
      finish(d, o);
      apply_.push_back([&o, set, always] {
        if (always || o.seen) set(T(o.value));
      });
    } else {
      static_assert(kWhole<T>, "a declared option's field must be a number, bool or string");
      auto& o = a.opt<long long>(d.flag, d.metavar, d.help, (long long)initial);
      // The Opt's own range is [0, the largest long long]: --help names only another one.
      constexpr double kTop = 9.2e18;
      if (d.has_range() && (d.lo != 0 || d.hi < kTop))
        o.range((long long)d.lo, d.hi >= kTop ? kMaxLongLong : (long long)d.hi, range_words(d));
      finish(d, o);
      apply_.push_back([&o, set, always] {
        if (always || o.seen) set(T(o.value));
      });
    }
  }

  template <class O>
  void finish(const OptionDecl& d, O& o) {
    if (d.required) o.required();
    opts_[d.key] = &o;
  }

  std::map<std::string, OptBase*> opts_;
  std::vector<std::function<void()>> apply_;
};

}  // namespace ragform::cli
