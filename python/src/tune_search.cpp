// ragform.tune for Python (python/ragform/tune.py): the search of `ragform tune` (tune/run.h)
// with any reader — a Model, an OpenAIReader or a Python object of the reader protocol — built
// from the same arguments by the same library function (tune::tune_options), returning the object
// `ragform tune --json` prints.
#include <cstdio>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include "base/error.h"
#include "bindings.h"
#include "engine/model/engine_options.h"
#include "engine/model/model_card.h"
#include "options.h"
#include "pipelines/common/common.h"
#include "reader/native_reader.h"
#include "store/run_store.h"
#include "store/sha256.h"
#include "tune/tune.h"

namespace ragform::py {

namespace {

// ragform.tune's arguments (tune/args.h's declaration, bound by options.h): the reader and the
// progress hook, then every declared keyword.
pyb::object tune_search(const pyb::handle& reader, const pyb::handle& progress,
                        const pyb::kwargs& kw) {
  const std::shared_ptr<reader::Reader> rd = reader_arg(reader, "reader");
  tune::TuneArgs ta;
  bind_keywords(ta, kw, "tune");
  tune::TuneOptions o = tune::tune_options(ta);
  const std::optional<size_t> ctx = ta.ctx;
  const bool abs_filter = ta.abs_filter;
  const std::string output = ta.output, store = ta.store_path;

  // What the CLI takes from -m and --ctx: the model file of a native reader, its context.
  const auto* native = dynamic_cast<const reader::NativeReader*>(rd.get());
  const std::string path = native ? native->model_path() : "";
  const std::optional<size_t> given = ctx;
  const size_t native_ctx = native ? size_t(default_context(model::training_context(path))) : 0;
  std::tie(o.ctx, o.ctx_source) = tune::context_cap(given, native != nullptr, path, native_ctx);
  // Token counts: under a context cap every prompt is fitted to it, and the ABS filter (run when
  // the reader has attention; without it the filter is skipped with a note) stores them.
  if (o.ctx)
    require_methods(*rd, {"tokenize"}, "tune with ctx=" + std::to_string(o.ctx));
  else if (abs_filter && rd->capabilities().attention)
    require_methods(*rd, {"tokenize"}, "tune's ABS filter (abs_filter=True)");
  o.origin = common::origin_for(*rd);
  o.model = path;
  tune::check_output_is_not_the_model(output, path);
  // Ctrl-C (and the progress callback) between two passes, as in every other pipeline; notes go
  // where the CLI prints them.
  const LoopHook hook(progress, 0);
  o.hooks = loop_hooks(hook);
  o.hooks.note = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };

  nlohmann::ordered_json out;
  {
    pyb::gil_scoped_release nogil;
    store::RunStore st(store);
    const tune::TuneSummary s = tune::run_tune(*rd, st, o);
    if (s.complete && !output.empty()) tune::save_profile(output, s.profile);
    out = tune::summary_json(s, o);
  }
  return from_json(out);
}

}  // namespace

void bind_tune_search(pyb::module_& m) {
  m.def("_tune", &tune_search, pyb::arg("reader"), pyb::arg("progress") = pyb::none());
}

}  // namespace ragform::py
