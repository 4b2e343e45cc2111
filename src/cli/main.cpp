// ragform: entry point. Global flags, dispatch to the registered subcommand, and the error policy
// of the front end: UsageError -> exit 2, any other error -> exit 1, one line on stderr.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/excerpt.h"
#include "base/memory_limit.h"
#include "base/options.h"
#include "base/progress.h"
#include "cli/command.h"
#include "cli/steer_flags.h"
#include "engine/runtime/steering.h"
#include "pipelines/common/common.h"

namespace ragform::cli {

std::map<std::string, Command>& registry() {
  static std::map<std::string, Command> r;
  return r;
}

Registrar::Registrar(std::string name, std::string summary, CommandFn fn, int order) {
  registry()[name] = Command{name, std::move(summary), std::move(fn), order};
}

int run_verbs(const std::string& group, const std::string& summary, const std::vector<Verb>& verbs,
              const std::vector<std::string>& args) {
  auto usage = [&] {
    std::string s = "usage: ragform " + group + " <verb> [options]\n\n" + summary + "\n\nverbs:\n";
    for (auto& v : verbs)
      s += "  " + v.name + std::string(v.name.size() < 12 ? 12 - v.name.size() : 1, ' ') +
           v.summary + "\n";
    s += "\nRun 'ragform " + group + " <verb> --help' for a verb's options.\n";
    return s;
  };
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    std::fputs(usage().c_str(), stdout);
    if (args.empty()) throw UsageError(group, "missing verb");
    return 0;
  }
  for (auto& v : verbs)
    if (v.name == args[0]) return v.run(std::vector<std::string>(args.begin() + 1, args.end()));
  throw UsageError(group, "unknown verb '" + args[0] + "' (see ragform " + group + " --help)");
}

namespace {
std::string version_line() { return "ragform " + common::tool_version(); }

void print_help() {
  std::string s =
      "usage: ragform <command> [options]\n\n"
      "Measure, calibrate and repair how the presentation of retrieved context changes what a\n"
      "retrieval-augmented LLM reader answers (SURE, C-NORM, SpotlightRAG) on a native GGUF "
      "engine.\n\n"
      "commands:\n";
  std::vector<const Command*> cmds;
  for (auto& [name, c] : registry()) cmds.push_back(&c);
  std::stable_sort(cmds.begin(), cmds.end(), [](auto* a, auto* b) { return a->order < b->order; });
  for (auto* c : cmds)
    s += "  " + c->name + std::string(c->name.size() < 16 ? 16 - c->name.size() : 1, ' ') +
         c->summary + "\n";
  s +=
      "\nglobal options:\n  -h, --help       show this help\n  --version        print the "
      "version\n\n"
      "environment:\n"
      "  RAGFORM_SHARED=DIR        where ../shared (fixtures, data) is\n"
      "  RAGFORM_PROGRESS=WHEN     progress lines (done/total, rate, ETA) on stderr: auto (when\n"
      "                            stderr is a terminal, the default), always, never\n"
      "  RAGFORM_API_KEY=KEY       serve: the API key, when --api-key(-file) is not given\n"
      "  RAGFORM_CPU=TIER          scalar, avx2 or avx512: cap the kernels' CPU tier\n"
      "  RAGFORM_F16_GEMM=HOW      exact (default) or int16 (approximate), when no --f16-gemm\n"
      "  RAGFORM_LOAD=HOW          mmap: map model files; memory: read them into huge pages\n"
      "                            (default: memory for files of 64 MB+ when there is room)\n"
      "  RAGFORM_NUMERICS=WHOSE    ggml (default: llama.cpp's RoPE angles and F16 GELU table) or\n"
      "                            transformers (its float RoPE angles and exact tanh GELU; a\n"
      "                            BERT encoder's erf GELU)\n\n"
      "Run 'ragform <command> --help' for a command's options. Exit codes: 0 ok, 1 runtime error,\n"
      "2 usage error. A fault in a file of settings that requests also take inline (C-NORM and\n"
      "tune profiles, bias curves, tune spaces) is a usage error; one in data or a learned file\n"
      "(records, corpora, indexes, word vectors, alpha files, SURE pairs) a runtime error. A\n"
      "numeric option takes a finite number in its range: 0 or more unless its help gives "
      "another.\n";
  std::fputs(s.c_str(), stdout);
}
}  // namespace
}  // namespace ragform::cli

namespace {
// What a failing command may use to unwind and report (install_memory_reserve).
constexpr size_t kCliMemoryReserve = size_t(8) << 20;

// OpenBLAS (FAISS's BLAS) starts a worker thread per core as it loads, each taking a 128 MB buffer
// of address space. Under an address-space limit (`ulimit -v`) a worker that cannot get it spins,
// and exit() waits for it forever: every command hung at exit below ~210 MB on 2 cores, a bound
// that grows with the cores (issue 40, pass 12). ragform's own threads do its work (BLAS only
// multiplies the dense index's small batches), so under such a limit the process starts again
// with OPENBLAS_NUM_THREADS=1, which the library reads only as it loads, whatever the variable
// said (pass 13: "", "0", "2" or "abc" hung as before). Without a limit nothing changes. It runs
// before the program's other static initialisers (priority 101; glibc hands a constructor argc,
// argv and envp): FAISS's own, which allocate, ran out of memory beside OpenBLAS's workers and
// ended in std::terminate before main could start again (a test under load at 212 MB, stop 57).
__attribute__((constructor(101))) void one_blas_thread_under_a_limit(int, char** argv, char**) {
  const char* now = std::getenv("OPENBLAS_NUM_THREADS");
  if (now && std::string(now) == "1") return;
  rlimit rl{};
  if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return;
  if (setenv("OPENBLAS_NUM_THREADS", "1", 1) != 0) return;
  execv("/proc/self/exe", argv);  // returns only when it failed: go on as this process
}
}  // namespace

namespace {
// Output a command printed that could not be written out (a full disk, a closed stdout) is a
// failure, exit 1: the output is lost (issue 40, pass 22: `retrieve --json > /dev/full` and a dozen
// other verbs exited 0 with nothing written; only export and data checked).
int with_stdout_written(int code) {
  std::cout.flush();
  errno = 0;
  const bool failed = std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout;
  if (!failed) return code;
  const int e = errno;
  std::fprintf(stderr, "ragform: stdout: the output could not be written%s\n",
               e ? (std::string(": ") + std::strerror(e)).c_str() : "");
  return code == 0 ? 1 : code;
}
}  // namespace

int main(int argc, char** argv) {
  using namespace ragform;
  // Room to unwind and say "out of memory" when an allocation fails: a nlohmann::json destructor
  // allocates as it frees, and a failure there is std::terminate (base/memory_limit.h; the server
  // keeps one of its own size).
  install_memory_reserve(kCliMemoryReserve);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    cli::print_help();
    return 2;
  }
  const std::string& first = args[0];
  if (first == "-h" || first == "--help" || first == "help") {
    cli::print_help();
    return with_stdout_written(0);
  }
  if (first == "--version" || first == "version") {
    std::printf("%s\n", cli::version_line().c_str());
    return with_stdout_written(0);
  }
  auto& reg = cli::registry();
  auto it = reg.find(first);
  try {
    if (const char* p = std::getenv("RAGFORM_PROGRESS")) {
      std::string v = p;
      if (v == "always" || v == "1")
        Progress::set_mode(Progress::Mode::always);
      else if (v == "never" || v == "0")
        Progress::set_mode(Progress::Mode::never);
      else if (v != "auto" && !v.empty())
        throw UsageError("RAGFORM_PROGRESS", "expected always, never or auto, got '" + v + "'");
    }
    if (it == reg.end()) throw UsageError(first, "unknown command (see ragform --help)");
    return with_stdout_written(
        it->second.run(std::vector<std::string>(args.begin() + 1, args.end())));
  } catch (const runtime::SteerError& e) {
    // A steering error names the steering object's key, wherever it was found (the flags, or
    // the engine against the model and prompt): the CLI says its flag (cli/steer_flags.h).
    std::fprintf(stderr, "ragform: %s\n", bounded_message(e.spelled(cli::steer_flag)).c_str());
    return 2;
  } catch (const OptionError& e) {
    // A declared option's error that no verb's OptionFlags spelled (a library check shared by
    // several verbs): the CLI's usual spelling of its key, "max_tokens" -> "--max-tokens".
    std::string flag = "--" + e.key();
    std::replace(flag.begin(), flag.end(), '_', '-');
    if (e.key().rfind('-', 0) == 0) flag = e.key();
    std::fprintf(stderr, "ragform: %s\n", bounded_message(flag + ": " + e.why()).c_str());
    return 2;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "ragform: %s\n", bounded_message(e.what()).c_str());
    return 2;
  } catch (const std::bad_alloc&) {  // its what() is "std::bad_alloc": say what it means
    std::fprintf(stderr, "ragform: %s\n", out_of_memory_message().c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ragform: %s\n", bounded_message(e.what()).c_str());
    return 1;
  }
}
