// ragform merge OUT.sqlite IN.sqlite...: combine the run stores of several workers (one per
// --shard) into one (store::RunStore::merge; docs/scale.md).
#include <cstdio>

#include "base/error.h"
#include "base/file_identity.h"
#include "cli/args.h"
#include "cli/command.h"
#include "cli/json_out.h"
#include "store/run_store.h"

namespace ragform::cli {
namespace {

int run_merge(const std::vector<std::string>& argv) {
  Args a("merge", "Merge run stores: ragform merge OUT.sqlite IN.sqlite [IN.sqlite ...]",
         "Runs are matched by identity (pipeline, config, model, reader, chat mode, seed). A row "
         "present\n"
         "in several inputs is kept once; a measured row replaces an unmeasured one; two measured "
         "rows\n"
         "that differ in more than their timings are a conflict: the first is kept and the "
         "conflict\n"
         "counted (rows that differ only in timings_ms are identical). OUT is created when\n"
         "missing (it may also be one of the stores being extended). Run metadata is copied "
         "where OUT\n"
         "lacks it; the prefill counters of shards that each brought rows to a run are added up. "
         "--json\n"
         "prints the counts.");
  a.positional("OUT", "the run store to write (created when missing)", false);
  a.positional("IN...", "run stores to merge into OUT", false);
  auto& json = a.flag("--json", "print the counts as one JSON object on stdout");
  // Args takes a fixed number of positionals: the file names are taken here, the flags there.
  std::vector<std::string> flags, files;
  bool only_files = false;
  for (auto& s : argv) {
    if (!only_files && s == "--") {
      only_files = true;
    } else if (!only_files && s.size() > 1 && s[0] == '-') {
      flags.push_back(s);
    } else {
      files.push_back(s);
    }
  }
  if (!a.parse(flags)) return 0;
  if (files.size() < 2) throw UsageError("merge", "give OUT.sqlite and at least one IN.sqlite");
  std::vector<std::filesystem::path> ins(files.begin() + 1, files.end());
  for (auto& p : ins) {
    if (!std::filesystem::exists(p)) throw UsageError("merge", p.string() + ": no such file");
    if (same_file(p.string(), files[0]))
      throw UsageError("merge", p.string() + " is the output store itself");
  }
  store::RunStore out(files[0], store::RunStore::Mode::create);
  auto st = out.merge(ins);
  if (json.value) {
    print_json_line(nlohmann::json{{"out", files[0]},
                                   {"inputs", ins.size()},
                                   {"runs_added", st.runs_added},
                                   {"rows_added", st.rows_added},
                                   {"rows_replaced", st.rows_replaced},
                                   {"rows_identical", st.rows_identical},
                                   {"rows_conflicting", st.rows_conflicting},
                                   {"meta_added", st.meta_added},
                                   {"meta_summed", st.meta_summed},
                                   {"meta_conflicting", st.meta_conflicting}});
  } else {
    std::fprintf(stderr,
                 "merged %zu stores into %s: %lld runs added, %lld rows added, %lld unmeasured "
                 "rows replaced, "
                 "%lld identical, %lld conflicting (kept the existing row)\n",
                 ins.size(), files[0].c_str(), (long long)st.runs_added, (long long)st.rows_added,
                 (long long)st.rows_replaced, (long long)st.rows_identical,
                 (long long)st.rows_conflicting);
  }
  return 0;
}

RAGFORM_COMMAND("merge", "merge run stores of several workers (--shard) into one", run_merge, 61);

}  // namespace
}  // namespace ragform::cli
