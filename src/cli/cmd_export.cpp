// ragform export: a run store's results (or runs) as JSONL or CSV, on stdout or into a file.
// The formats are documented in store/export.h.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "base/atomic_file.h"
#include "base/error.h"
#include "cli/args.h"
#include "cli/command.h"
#include "store/export.h"
#include "store/run_store.h"

namespace ragform::cli {
namespace {

int cmd_export(const std::vector<std::string>& argv) {
  Args a("export", "Export a run store (RUN.sqlite) to JSONL or CSV.",
         "JSONL: one object per result row. CSV (RFC 4180): one record per row, score objects\n"
         "flattened into score.<name> columns. With --table runs, one record per run instead.");
  auto& file = a.positional("RUN.sqlite", "the run store to read");
  auto& run = a.opt<long long>("--run", "ID", "only this run (0 = all runs)", 0);
  auto& format = a.opt<std::string>("--format", "jsonl|csv", "output format", "jsonl");
  auto& table = a.opt<std::string>("--table", "results|runs", "what to export", "results");
  auto& out_path = a.opt<std::string>("-o,--output", "FILE", "write here instead of stdout");
  if (!a.parse(argv)) return 0;

  store::ExportFormat fmt;
  if (format.value == "jsonl") {
    fmt = store::ExportFormat::jsonl;
  } else if (format.value == "csv") {
    fmt = store::ExportFormat::csv;
  } else {
    throw UsageError("--format", "expected jsonl or csv, got '" + format.value + "'");
  }
  store::ExportTable tbl;
  if (table.value == "results") {
    tbl = store::ExportTable::results;
  } else if (table.value == "runs") {
    tbl = store::ExportTable::runs;
  } else {
    throw UsageError("--table", "expected results or runs, got '" + table.value + "'");
  }
  std::optional<std::int64_t> only;
  if (run.value > 0) only = run.value;

  store::RunStore st(*file.value, store::RunStore::Mode::read_only);
  if (out_path.value.empty()) {
    std::ios::sync_with_stdio(false);
    store::export_store(st, only, tbl, fmt, std::cout);
    std::cout.flush();
    if (!std::cout) throw Error("export", "cannot write to stdout");
    return 0;
  }
  // Written next to the target and renamed into place (base/atomic_file.h: a new temporary file,
  // never through a planted symlink), so a failed export leaves no half file.
  const std::filesystem::path target(out_path.value);
  AtomicFile out(out_path.value, "export");
  const std::int64_t n = store::export_store(st, only, tbl, fmt, out.stream());
  out.commit();
  std::fprintf(stderr, "export: %lld records -> %s\n", static_cast<long long>(n), target.c_str());
  return 0;
}

}  // namespace

RAGFORM_COMMAND("export", "export a run store (RUN.sqlite) to JSONL or CSV", cmd_export, 95);

}  // namespace ragform::cli
