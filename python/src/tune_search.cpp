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
#include "pipelines/common/common.h"
#include "reader/native_reader.h"
#include "store/run_store.h"
#include "store/sha256.h"
#include "tune/tune.h"

namespace ragform::py {

namespace {

// A dimension's values: a str as the CLI's comma list, a list or tuple of str or numbers as it is
// (a list is never split at commas, so "," and "a,b" are delimiters).
std::vector<std::string> dimension_list(const pyb::handle& v, const char* name) {
  if (pyb::isinstance<pyb::str>(v)) return tune::dimension_values(name, v.cast<std::string>());
  if (!pyb::isinstance<pyb::list>(v) && !pyb::isinstance<pyb::tuple>(v))
    throw UsageError(name, "a list of values or a comma-separated str");
  std::vector<std::string> out;
  for (const pyb::handle& x : v) out.push_back(pyb::str(x).cast<std::string>());
  return out;
}

size_t count_arg(long long v, const char* name, long long lo) {
  if (v < lo) throw UsageError(name, "must be at least " + std::to_string(lo));
  return size_t(v);
}

pyb::object tune_search(const pyb::handle& reader, const std::string& task, long long budget,
                        const std::string& store, const std::string& input,
                        const std::string& holdout, long long dev_items, long long holdout_items,
                        long long needle_slots, const std::string& objective, double robust_floor,
                        const std::string& deploy, const std::string& space,
                        const pyb::dict& dimensions, const std::string& tmpl, int max_tokens,
                        long long seed, bool abs_filter, std::optional<long long> abs_prompts,
                        std::optional<double> abs_keep, long long eta,
                        std::optional<long long> finalists, long long robust_items,
                        std::optional<std::pair<int, int>> shard, std::optional<long long> ctx,
                        const std::string& output, const pyb::handle& progress) {
  const std::shared_ptr<reader::Reader> rd = reader_arg(reader, "reader");
  if (seed < 0) throw UsageError("seed", "must be >= 0");
  tune::TuneArgs ta;
  ta.task = task;
  ta.input = input;
  ta.holdout = holdout;
  ta.dev_items = count_arg(dev_items, "dev_items", 1);
  ta.holdout_items = count_arg(holdout_items, "holdout_items", 0);
  ta.needle_slots = count_arg(needle_slots, "needle_slots", 1);
  ta.budget = count_arg(budget, "budget", 0);
  ta.objective = objective;
  ta.robust_floor = robust_floor;
  ta.deploy = deploy;
  ta.space_file = space;
  for (const char* dim : {"delimiter", "p", "format", "order", "k", "spotlight"})
    if (dimensions.contains(dim) && !dimensions[dim].is_none())
      ta.dimensions.emplace_back(dim, dimension_list(dimensions[dim], dim));
  ta.template_file = tmpl;
  ta.max_tokens = max_tokens;
  ta.seed = uint64_t(seed);
  ta.abs_filter = abs_filter;
  if (abs_prompts) ta.abs_prompts = count_arg(*abs_prompts, "abs_prompts", 1);
  ta.abs_keep = abs_keep;
  ta.eta = count_arg(eta, "eta", 2);
  if (finalists) ta.finalists = count_arg(*finalists, "finalists", 1);
  ta.robust_items = count_arg(robust_items, "robust_items", 1);
  if (shard) {
    if (shard->second < 1 || shard->first < 0 || shard->first >= shard->second)
      throw UsageError("shard", "(i, n) with 0 <= i < n");
    std::tie(ta.shard_index, ta.shard_count) = *shard;
  }
  ta.store_path = store;
  tune::TuneOptions o = tune::tune_options(ta);

  // What the CLI takes from -m and --ctx: the model file of a native reader, its context.
  const auto* native = dynamic_cast<const reader::NativeReader*>(rd.get());
  const std::string path = native ? native->model_path() : "";
  std::optional<size_t> given;
  if (ctx) given = count_arg(*ctx, "ctx", 1);
  const size_t native_ctx = native ? size_t(default_context(model::training_context(path))) : 0;
  std::tie(o.ctx, o.ctx_source) = tune::context_cap(given, native != nullptr, path, native_ctx);
  // Token counts: under a context cap every prompt is fitted to it, and the ABS filter (run when
  // the reader has attention; without it the filter is skipped with a note) stores them.
  if (o.ctx)
    require_methods(*rd, {"tokenize"}, "tune with ctx=" + std::to_string(o.ctx));
  else if (abs_filter && rd->capabilities().attention)
    require_methods(*rd, {"tokenize"}, "tune's ABS filter (abs_filter=True)");
  o.origin =
      common::origin_of(*rd, common::tool_version(), path, native ? store::sha256_file(path) : "");
  o.model = path;
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
  using pyb::arg;
  m.def("_tune", &tune_search, arg("reader"), arg("task"), arg("budget"), arg("store"),
        arg("input") = "", arg("holdout") = "", arg("dev_items") = 24, arg("holdout_items") = 32,
        arg("needle_slots") = 6, arg("objective") = "accuracy", arg("robust_floor") = 0.8,
        arg("deploy") = "confirmed", arg("space") = "", arg("dimensions") = pyb::dict(),
        arg("template") = "", arg("max_tokens") = 12, arg("seed") = 0, arg("abs_filter") = true,
        arg("abs_prompts") = std::nullopt, arg("abs_keep") = std::nullopt, arg("eta") = 2,
        arg("finalists") = std::nullopt, arg("robust_items") = 8, arg("shard") = std::nullopt,
        arg("ctx") = std::nullopt, arg("output") = "", arg("progress") = pyb::none());
}

}  // namespace ragform::py
