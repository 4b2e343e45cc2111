// Declarative command-line flags: every flag is declared once, with its default and help text, and
// --help is generated from the declarations (the way gemma.cpp's gemma_args.h declares its flags).
//
//   cli::Args a("tokenize", "Turn text into token ids with a model's own tokenizer.");
//   auto& model = a.opt<std::string>("-m,--model", "FILE", "GGUF model file").required();
//   auto& json  = a.flag("--json", "print one JSON object on stdout");
//   auto& n     = a.opt<int>("-n,--n-predict", "N", "tokens to generate", 32);
//   if (!a.parse(argv)) return 0;   // --help was printed
//   use(model.value, json.value, n.value);
//
// Errors (unknown flag, missing value, bad number, missing required flag) throw UsageError.
//
// One rule for every numeric flag of every command (parse_number below): the value must be a
// finite number ("nan", "inf", "1e999" are refused) inside the flag's range. A numeric flag's
// range is [0, the type's maximum] unless its declaration says otherwise with .range(lo, hi) —
// so a negative count, temperature or weight is refused unless a flag asks for negatives (a
// layer counted from the end). A refused value is a UsageError naming the flag (exit 2).
#pragma once
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/threads.h"

namespace ragform::cli {

// Range ends for .range(): kAnyInt..kMaxInt accepts every int (a layer counted from the end).
inline constexpr int kAnyInt = std::numeric_limits<int>::lowest();
inline constexpr int kMaxInt = std::numeric_limits<int>::max();

// The largest --threads any command accepts (base/threads.h: 4 x the logical cores), the bound
// the Python module applies too.
using ::ragform::max_threads;

struct OptBase {
  std::vector<std::string> names;  // "-m", "--model"
  std::string metavar;             // empty for boolean flags
  std::string help;
  std::string default_text;  // shown in --help; empty = no default
  std::string range_text;    // shown in --help when a numeric flag declares its own range
  bool is_required = false;
  bool seen = false;
  virtual ~OptBase() = default;
  virtual void set(const std::string& flag, const std::string& text) = 0;
  std::string display_names() const;
};

// "0..10", "1 or more", "any value": an accepted interval in words (int, long long, double).
template <typename T>
std::string describe_range(T lo, T hi);

// The range a numeric Opt<T> accepts by default: [0, max].
template <typename T>
struct DefaultRange {
  static constexpr T lo = T{}, hi = T{};
};
template <>
struct DefaultRange<int> {
  static constexpr int lo = 0, hi = std::numeric_limits<int>::max();
};
template <>
struct DefaultRange<long long> {
  static constexpr long long lo = 0, hi = std::numeric_limits<long long>::max();
};
template <>
struct DefaultRange<double> {
  static constexpr double lo = 0, hi = std::numeric_limits<double>::max();
};

template <typename T>
struct Opt : OptBase {
  T value{};
  T lo = DefaultRange<T>::lo, hi = DefaultRange<T>::hi;  // numeric types only
  void set(const std::string& flag, const std::string& text) override;
  Opt& required() {
    is_required = true;
    return *this;
  }
  // The closed interval of accepted values (numeric flags); `text` replaces "lo..hi" in --help
  // when an end depends on the machine (--threads), so the reference stays the same everywhere.
  Opt& range(T low, T high, std::string text = "") {
    lo = low;
    hi = high;
    range_text = text.empty() ? describe_range(low, high) : std::move(text);
    return *this;
  }
};

struct Flag : OptBase {
  bool value = false;
  void set(const std::string&, const std::string&) override { value = true; }
};

struct Positional {
  std::string name, help;
  bool is_required = true;
  std::optional<std::string> value;
};

class Args {
 public:
  Args(std::string command, std::string summary, std::string details = "");

  template <typename T>
  Opt<T>& opt(const std::string& names, const std::string& metavar, const std::string& help,
              T def = T{});
  Flag& flag(const std::string& names, const std::string& help);
  Positional& positional(const std::string& name, const std::string& help, bool required = true);

  // Parses argv (without the program and command names). Returns false when --help was printed.
  bool parse(const std::vector<std::string>& argv);
  std::string help_text() const;
  const std::string& command() const { return command_; }

 private:
  OptBase* find(const std::string& name) const;
  std::string command_, summary_, details_;
  std::vector<std::unique_ptr<OptBase>> opts_;
  std::vector<std::unique_ptr<Positional>> positionals_;
};

// The one parsing rule of numeric flags: `text` must be a whole number (T = int, long long) or a
// finite number (T = double) in [lo, hi]; UsageError naming `flag` otherwise.
template <typename T>
T parse_number(const std::string& flag, const std::string& text, T lo, T hi);

// Parses "1,2,3" into numbers, each by parse_number in [lo, hi]; throws UsageError naming the flag.
std::vector<int> parse_int_list(const std::string& flag, const std::string& text, int lo = 0,
                                int hi = std::numeric_limits<int>::max());
std::vector<double> parse_number_list(const std::string& flag, const std::string& text, double lo,
                                      double hi);

}  // namespace ragform::cli
