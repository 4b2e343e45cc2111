// Run stores (store/run_store.h) for Python: the runs and their rows as plain dicts, the columns
// of the `runs` and `results` tables with the JSON columns (config, scores, timings_ms, extra)
// decoded. The pure-Python RunStore adds to_pandas().
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include <pybind11/stl.h>

#include "base/error.h"
#include "base/paths.h"
#include "bindings.h"
#include "store/export.h"
#include "store/run_store.h"

namespace ragform::py {

namespace {

std::shared_ptr<store::RunStore> open_store(const std::string& path) {
  check_path(path);  // before exists(), which would look for the name cut at a NUL byte
  std::error_code ec;
  // A missing file is the caller's file error (FileNotFoundError), not a store format error.
  if (!std::filesystem::exists(path, ec)) throw FileError(path, std::strerror(ENOENT), ENOENT);
  pyb::gil_scoped_release nogil;
  return std::make_shared<store::RunStore>(path, store::RunStore::Mode::read_only);
}

pyb::dict run_dict(const store::RunInfo& r) {
  pyb::dict d;
  d["id"] = r.id;
  d["created_at"] = r.created_at;
  d["pipeline"] = r.pipeline;
  d["config"] = from_json(r.config);
  d["tool_version"] = r.tool_version;
  d["model_path"] = r.model_path;
  d["model_sha256"] = r.model_sha256;
  d["reader"] = r.reader;
  d["chat_mode"] = r.chat_mode;
  d["seed"] = r.seed;
  d["config_key"] = r.config_key;
  return d;
}

// A row as `ragform export --format jsonl` writes it (store/export.h to_json): the same keys,
// error null on an ok row, text with invalid UTF-8 replaced.
pyb::object result_dict(const store::Result& r) { return from_json(store::to_json(r)); }

}  // namespace

void bind_store(pyb::module_& m) {
  pyb::class_<store::RunStore, std::shared_ptr<store::RunStore>>(
      m, "_RunStore", "A run store (SQLite) opened read-only.")
      .def(pyb::init(&open_store), pyb::arg("path"))
      .def_property_readonly("path", [](const store::RunStore& s) { return s.path().string(); })
      .def("runs",
           [](const store::RunStore& s) {
             pyb::list l;
             for (const auto& r : s.runs()) l.append(run_dict(r));
             return l;
           })
      .def(
          "rows",
          [](const store::RunStore& s, std::optional<int64_t> run) {
            if (run && !s.run(*run))
              throw UsageError(s.path().string(), "no run " + std::to_string(*run));
            std::vector<store::Result> rs;
            {
              pyb::gil_scoped_release nogil;
              rs = s.results(run);
            }
            pyb::list l;
            for (const auto& r : rs) l.append(result_dict(r));
            return l;
          },
          pyb::arg("run") = std::nullopt)
      .def(
          "counts",
          [](const store::RunStore& s, int64_t run) {
            if (!s.run(run)) throw UsageError(s.path().string(), "no run " + std::to_string(run));
            return from_json(store::counts_json(s.counts(run)));
          },
          pyb::arg("run"));
}

}  // namespace ragform::py
