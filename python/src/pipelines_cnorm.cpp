// C-NORM for Python (docs/python.md, python/ragform/cnorm.py): calibrate and apply, the
// functions of `ragform cnorm calibrate|apply` (pipelines/cnorm) on records given as dicts or a
// file. Profiles are plain dicts, the JSON object `cnorm calibrate` writes.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "base/error.h"
#include "bindings.h"
#include "eval/datasets.h"
#include "eval/jsonl.h"
#include "pipelines/cnorm/cnorm.h"
#include "pipelines/common/common.h"
#include "qa_records.h"
#include "reader/native_reader.h"
#include "store/run_store.h"
#include "store/sha256.h"

namespace ragform::py {

namespace {

// records: a list of dicts or the path of a JSONL file (then input_sha256 is the file's hash, as
// the CLI records it; for dicts it is the hash of their canonical JSON lines). `shared` stays a
// keyword but is not looked up: the default templates are built in (tasks.h load_template).
pyb::object cnorm_calibrate(const pyb::handle& model, pyb::object records,
                            const std::string& task_s, int S, std::optional<std::string> delims,
                            double p, int64_t seed, int k, int layer, const std::string& heads,
                            bool context_span, const std::string& template_path,
                            const std::string& /*shared*/, const std::string& system,
                            std::optional<int> ctx, pyb::object progress) {
  using namespace cnorm;
  // A reader without a context of its own (OpenAIReader, a Python reader) gets the CLI's --ctx
  // default, to which k is fitted.
  const int n_ctx = ctx.value_or(kDefaultContext);
  if (n_ctx < 1) throw UsageError("n_ctx", "must be >= 1");
  const std::shared_ptr<reader::Reader> rd = reader_arg(model, "model");
  // Token counts fit k and place the context; ABS reads attention.
  require_methods(*rd, {"tokenize", "attention"}, "cnorm.calibrate");
  auto* native = dynamic_cast<reader::NativeReader*>(rd.get());
  // The CLI's set-up (setup.h), its errors naming these keywords.
  CalibrationRequest req;
  req.task = task_s;
  req.samples = S;
  if (delims) req.delims = *delims;
  req.p = p;
  req.seed = seed;
  req.k = k;
  req.layer = layer;
  req.heads = heads;
  req.context_span = context_span;
  req.template_path = template_path;
  req.names.samples = "S";
  req.names.k = "k";
  req.names.seed = "seed";
  req.names.p = "p";
  req.names.heads = "heads";
  CalibrationPlan plan = calibration_plan(req);
  const Task task = plan.options.setup.task;

  auto [recs, input_sha] = records_arg(records);

  if (task == Task::Needle && !recs.empty())
    throw UsageError("records", "the needle task generates its items; give no records");
  pyb::gil_scoped_release nogil;
  std::vector<Item> items =
      task_items(task, recs, plan.options.k, plan.item_seed, plan.options.samples);
  if (items.empty()) throw UsageError("cnorm calibrate", "no items in the records");
  // The CLI's runner (pipelines/cnorm/run.h) without a store or a profile cache.
  CalibrateOptions& opt = plan.options;
  opt.ctx = size_t(n_ctx);
  if (native) {
    opt.origin.model_path = native->model_path();
    opt.origin.model_sha256 = store::sha256_file(native->model_path());
  }
  opt.input_sha256 = input_sha;
  opt.system_sha256 = system.empty() ? "" : store::sha256_hex(system);
  LoopHook hook(progress, 0);
  size_t done = 0, total = 0;
  opt.hooks.begin = [&](const std::string&, uint64_t n) { total = size_t(n); };
  opt.hooks.advance = [&](uint64_t n) {
    hook.step_of(done, total);  // Ctrl-C and the progress bar, between two passes
    done += size_t(n);
  };
  const Profile prof = run_calibrate(*rd, items, opt).profile;
  hook.step_of(done, total);
  nlohmann::json out = profile_to_json(prof);
  pyb::gil_scoped_acquire gil;
  return from_json(out);
}

// A profile passed as a Python value is an argument: a bad one is a ValueError (UsageError), as
// for any other bad argument, with the loader's message.
cnorm::Profile profile_arg(const pyb::handle& profile) {
  try {
    return cnorm::profile_from_json(to_json(profile), "profile");
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

// As `ragform cnorm apply` on one record (cnorm::apply_profile): every ctxs[i].text, or the
// "text" string, formatted with the profile's delimiter and ratio; every other field unchanged.
pyb::object cnorm_apply(const pyb::handle& profile, const pyb::handle& record) {
  const cnorm::Profile prof = profile_arg(profile);
  (void)cnorm::applied_format(prof);  // the profile's error before the record's, as the CLI
  nlohmann::json j = to_json(record);
  if (!j.is_object()) throw UsageError("cnorm apply", "the record must be a dict");
  try {
    return from_json(cnorm::apply_profile(prof, std::move(j)).record);
  } catch (const eval::RowError& e) {
    throw UsageError("cnorm apply", e.what());
  }
}

// As `ragform cnorm eval` for qa, kv and needle (section 5.1; run.h run_eval): Baseline, C-NORM
// and Min-Token by gold-position sweep, one run per seed in `store_path`, resumable. Returns the
// summary line the CLI prints (eval_summary_json) with "store". A native reader's profile must
// come from its model file and task (unless `force`); a profile has no identity of other readers,
// so for them only the task is checked.
pyb::object cnorm_evaluate(const pyb::handle& model, pyb::object records,
                           const pyb::handle& profile, const std::string& task_s, int k, int limit,
                           std::vector<int64_t> seeds_in, int max_tokens,
                           const std::string& template_path, const std::string& store_path,
                           const std::string& positions, bool all_candidates,
                           std::optional<std::string> density, bool force, std::optional<int> ctx,
                           pyb::object progress) {
  using namespace cnorm;
  const Task task = parse_arg([&] { return parse_task(task_s); });
  if (task == Task::Longbench)
    throw UsageError("task", "longbench is `ragform cnorm eval --task longbench` (not in Python)");
  if (positions != "all" && positions != "natural")
    throw UsageError("positions", "expected all or natural, got '" + positions + "'");
  if (k < 1 || max_tokens < 1 || limit < 0)
    throw UsageError("cnorm evaluate", "k and max_tokens must be >= 1, limit >= 0");
  const Profile prof = profile_arg(profile);
  std::vector<uint64_t> seeds;
  for (int64_t sd : seeds_in) {
    if (sd < 0) throw UsageError("seeds", "seeds must be >= 0");
    if (std::find(seeds.begin(), seeds.end(), uint64_t(sd)) != seeds.end())
      throw UsageError("seeds", "seed " + std::to_string(sd) + " given twice");
    seeds.push_back(uint64_t(sd));
  }
  if (seeds.empty()) seeds = {prof.seed};
  auto [recs, input_sha] = records_arg(records);
  if (task == Task::Needle && !recs.empty())
    throw UsageError("records", "the needle task generates its items; give no records");
  const std::shared_ptr<reader::Reader> rd = reader_arg(model, "model");
  require_methods(*rd, {"tokenize"}, "cnorm.evaluate");  // k fitted, Min-Token's counts
  auto* native = dynamic_cast<reader::NativeReader*>(rd.get());
  const std::string model_sha = native ? store::sha256_file(native->model_path()) : "";
  if (std::string why =
          profile_mismatch(prof, native ? model_sha : prof.model_sha256, task_name(task));
      !why.empty() && !force)
    throw UsageError("profile", why + " (calibrate for this pair, or force=True)");
  EvalOptions eo;
  eo.task = task;
  eo.tmpl = load_template(task, template_path);
  eo.profile = prof;
  eo.seeds = seeds;
  eo.k = size_t(k);
  eo.ctx = size_t(ctx.value_or(kDefaultContext));
  eo.max_tokens = max_tokens;
  eo.natural_positions = positions == "natural";
  eo.all_candidates = all_candidates;
  if (density) eo.density = parse_ratio_list(*density, "density");
  eo.input_sha256 = input_sha;
  eo.origin = common::origin_for(*rd);
  const LoopHook hook(progress, 0);
  auto state = std::make_shared<std::pair<size_t, size_t>>(0, 0);
  eo.hooks.begin = [state, &hook](const std::string&, uint64_t n) {
    *state = {0, size_t(n)};
    hook.step_of(0, state->second);
  };
  eo.hooks.advance = [state, &hook](uint64_t n) {
    state->first += size_t(n);
    hook.step_of(state->first, state->second);  // Ctrl-C between two batches
  };
  nlohmann::json out;
  {
    pyb::gil_scoped_release nogil;
    // One item set per seed, as the CLI builds them (the runner fits k over all of them).
    const size_t n_needle = limit > 0 ? size_t(limit) : 20;
    std::vector<std::vector<Item>> per_seed;
    for (uint64_t sd : seeds) {
      std::vector<Item> items = task_items(task, recs, size_t(k), sd, n_needle);
      if (limit > 0 && items.size() > size_t(limit)) items.resize(size_t(limit));
      if (items.empty()) throw UsageError("cnorm evaluate", "no items in the records");
      per_seed.push_back(std::move(items));
    }
    store::RunStore st(store_path);
    const EvalSummary sum = run_eval(*rd, st, per_seed, eo);
    out = eval_summary_json(sum, eo);
    out["store"] = store_path;
  }
  return from_json(out);
}

}  // namespace

void bind_pipelines_cnorm(pyb::module_& m) {
  using pyb::arg;
  m.def("_cnorm_calibrate", &cnorm_calibrate, arg("model"), arg("records"), arg("task"), arg("S"),
        arg("delims"), arg("p"), arg("seed"), arg("k"), arg("layer"), arg("heads"),
        arg("context_span"), arg("template"), arg("shared"), arg("system"), arg("n_ctx"),
        arg("progress"));
  m.def("_cnorm_apply", &cnorm_apply, arg("profile"), arg("record"));
  m.def("_cnorm_evaluate", &cnorm_evaluate, arg("model"), arg("records"), arg("profile"),
        arg("task"), arg("k"), arg("limit"), arg("seeds"), arg("max_tokens"), arg("template"),
        arg("store"), arg("positions"), arg("all_candidates"), arg("density"), arg("force"),
        arg("ctx"), arg("progress"));
  m.def("_cnorm_default_delimiters", &cnorm::default_delimiter_list);
}

}  // namespace ragform::py
