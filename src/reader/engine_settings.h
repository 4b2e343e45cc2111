// The reader and engine settings of a native model, declared once: every front end binds its
// own spelling of them from this one list, the CLI as flags (cli/reader_flags.h; the CPU tier and
// the load mode as RAGFORM_* variables, cli/engine_env.h) and Python as keyword arguments of
// ragform.Model (python/src/engine.cpp). A setting added here is a flag and a keyword at once,
// with the same help, default and range.
#pragma once
#include <climits>
#include <string>
#include <vector>

#include "engine/model/engine_options.h"

namespace ragform::reader {

// The default context length (engine_options.h), the --ctx flag's and ctx=None's.
using ::ragform::default_context;
using ::ragform::kDefaultContext;

// One setting as the front ends show it.
struct Setting {
  const char* key;      // the Python keyword ("prefix_cache_mb")
  const char* flag;     // the CLI flag ("--prefix-cache-mb"); "" = none
  const char* env;      // the CLI's environment variable ("RAGFORM_CPU"); "" = none
  const char* metavar;  // the flag's value name ("N"); "" for a switch without value
  const char* help;     // the flag's help line
  const char* value;    // the CLI's default, as typed on the command line ("" = none shown)
  // Integer settings: the accepted range. hi = kThreadsMax: the thread bound of base/threads.h
  // (max_threads(), "0..4 x the cores"). lo > hi: not an integer.
  int lo = 1, hi = 0;
};

inline constexpr int kThreadsMax = INT_MIN + 1;

// Every setting, in the order of the CLI's --help.
const std::vector<Setting>& engine_settings();
// The setting named `key`; throws Error("engine settings", ...) for a key that is not declared.
const Setting& engine_setting(const std::string& key);

// f(setting) for each declared setting, in order.
template <class F>
void visit_engine_settings(F&& f) {
  for (const Setting& s : engine_settings()) f(s);
}

}  // namespace ragform::reader
