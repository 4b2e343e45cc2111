// Subcommand registry. Each src/cli/cmd_<name>.cpp registers itself with RAGFORM_COMMAND, so adding
// a command never edits a central table. A command returns its exit code: 0 ok, 1 runtime error;
// it throws UsageError (exit 2) or Error (exit 1) and main() prints "ragform: <what>: <why>".
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ragform::cli {

using CommandFn = std::function<int(const std::vector<std::string>& args)>;

struct Command {
  std::string name;
  std::string summary;  // one line for `ragform --help`
  CommandFn run;
  int order = 100;  // position in `ragform --help` (engine commands first, then pipelines)
};

std::map<std::string, Command>& registry();

struct Registrar {
  Registrar(std::string name, std::string summary, CommandFn fn, int order = 100);
};

// Runs a group command with sub-verbs ("cnorm calibrate ..."): dispatches on args[0] to one of
// `verbs`, prints the verb list for --help or no verb.
struct Verb {
  std::string name, summary;
  CommandFn run;
};
int run_verbs(const std::string& group, const std::string& summary, const std::vector<Verb>& verbs,
              const std::vector<std::string>& args);

}  // namespace ragform::cli

#define RAGFORM_CONCAT2(a, b) a##b
#define RAGFORM_CONCAT(a, b) RAGFORM_CONCAT2(a, b)
#define RAGFORM_COMMAND(name, summary, fn, order) \
  static ::ragform::cli::Registrar RAGFORM_CONCAT(ragform_cmd_, __LINE__)(name, summary, fn, order)
