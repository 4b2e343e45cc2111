// Declarative command-line flags: every flag is declared once, with its default and help text, and
// --help is generated from the declarations (STYLE.md "Front ends", after gemma.cpp gemma_args.h).
//
//   cli::Args a("tokenize", "Turn text into token ids with a model's own tokenizer.");
//   auto& model = a.opt<std::string>("-m,--model", "FILE", "GGUF model file").required();
//   auto& json  = a.flag("--json", "print one JSON object on stdout");
//   auto& n     = a.opt<int>("-n,--n-predict", "N", "tokens to generate", 32);
//   if (!a.parse(argv)) return 0;   // --help was printed
//   use(model.value, json.value, n.value);
//
// Errors (unknown flag, missing value, bad number, missing required flag) throw UsageError.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ragform::cli {

struct OptBase {
  std::vector<std::string> names;  // "-m", "--model"
  std::string metavar;             // empty for boolean flags
  std::string help;
  std::string default_text;  // shown in --help; empty = no default
  bool is_required = false;
  bool seen = false;
  virtual ~OptBase() = default;
  virtual void set(const std::string& flag, const std::string& text) = 0;
  std::string display_names() const;
};

template <typename T>
struct Opt : OptBase {
  T value{};
  void set(const std::string& flag, const std::string& text) override;
  Opt& required() {
    is_required = true;
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

// Parses "1,2,3" into numbers; throws UsageError naming the flag.
std::vector<int> parse_int_list(const std::string& flag, const std::string& text);

}  // namespace ragform::cli
