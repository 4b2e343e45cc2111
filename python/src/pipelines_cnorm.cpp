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
#include "options.h"
#include "pipelines/cnorm/cnorm.h"
#include "pipelines/common/common.h"
#include "qa_records.h"
#include "reader/native_reader.h"
#include "store/run_store.h"
#include "store/sha256.h"

namespace ragform::py {

namespace {

// records: a list of dicts or the path of a JSONL file (then input_sha256 is the file's hash, as
// the CLI records it; for dicts it is the hash of their canonical JSON lines). Every keyword of
// setup.h's CalibrationRequest is bound from `kw` (options.h: kinds and ranges, errors naming the
// keyword); calibration_plan validates them as it does for the CLI.
pyb::object cnorm_calibrate(const pyb::handle& model, pyb::object records,
                            const std::string& system, std::optional<int> ctx, pyb::object progress,
                            const pyb::kwargs& kw) {
  using namespace cnorm;
  CalibrationRequest req;
  bind_keywords(req, kw, "cnorm.calibrate");
  // A reader without a context of its own (OpenAIReader, a Python reader) gets the CLI's --ctx
  // default, to which k is fitted.
  const int n_ctx = ctx.value_or(kDefaultContext);
  if (n_ctx < 1) throw UsageError("n_ctx", "must be >= 1");
  const std::shared_ptr<reader::Reader> rd = reader_arg(model, "model");
  // Token counts fit k and place the context; ABS reads attention.
  require_methods(*rd, {"tokenize", "attention"}, "cnorm.calibrate");
  CalibrationPlan plan = calibration_plan(req);
  const Task task = plan.options.setup.task;

  auto [recs, input_sha] = records_arg(records);

  if (task == Task::Needle && !recs.empty())
    throw UsageError("records", "the needle task generates its items; give no records");
  pyb::gil_scoped_release nogil;
  // Records without enough distractors are left out, as the CLI leaves them out.
  std::vector<std::string> skipped;
  std::vector<Item> items =
      task_items(task, recs, plan.options.k, plan.item_seed, plan.options.samples, &skipped);
  if (items.empty()) throw UsageError("cnorm calibrate", "no items in the records");
  // The CLI's runner (pipelines/cnorm/run.h) without a store or a profile cache.
  CalibrateOptions& opt = plan.options;
  opt.ctx = size_t(n_ctx);
  opt.origin = common::origin_for(*rd);
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
    return cnorm::profile_from_json(to_json(profile, "profile"), "profile");
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
  nlohmann::json j = to_json(record, "record");
  if (!j.is_object()) throw UsageError("cnorm apply", "the record must be a dict");
  try {
    return from_json(cnorm::apply_profile(prof, std::move(j)).record);
  } catch (const eval::RowError& e) {
    throw UsageError("cnorm apply", e.what());
  }
}

// As `ragform cnorm eval` for qa, kv and needle (section 5.1; run.h run_eval): Baseline, C-NORM
// and Min-Token by gold-position sweep, one run per seed in `store_path`, resumable. Returns the
// summary line the CLI prints (eval_summary_json) with "store". The keywords are setup.h's
// EvalRequest, planned by eval_plan as the CLI plans them. A native reader's profile must come
// from its model file and task (unless force); a profile has no identity of other readers, so for
// them only the task is checked.
pyb::object cnorm_evaluate(const pyb::handle& model, pyb::object records,
                           const pyb::handle& profile, const std::string& store_path,
                           std::optional<int> ctx, pyb::object progress, const pyb::kwargs& kw) {
  using namespace cnorm;
  EvalRequest req;
  bind_keywords(req, kw, "cnorm.evaluate");
  const Task task = parse_task(req.task);
  if (task == Task::Longbench)
    throw UsageError("task", "longbench is `ragform cnorm eval --task longbench` (not in Python)");
  const Profile prof = profile_arg(profile);
  auto [recs, input_sha] = records_arg(records);
  if (task == Task::Needle && !recs.empty())
    throw UsageError("records", "the needle task generates its items; give no records");
  const std::shared_ptr<reader::Reader> rd = reader_arg(model, "model");
  require_methods(*rd, {"tokenize"}, "cnorm.evaluate");  // k fitted, Min-Token's counts
  auto* native = dynamic_cast<reader::NativeReader*>(rd.get());
  const std::string model_sha = native ? store::sha256_file(native->model_path()) : "";
  if (std::string why =
          profile_mismatch(prof, native ? model_sha : prof.model_sha256, task_name(task));
      !why.empty() && !req.force)
    throw UsageError("profile", why + " (calibrate for this pair, or force=True)");
  const LoopHook hook(progress, 0);
  auto state = std::make_shared<std::pair<size_t, size_t>>(0, 0);
  nlohmann::json out;
  {
    pyb::gil_scoped_release nogil;
    EvalPlan plan = eval_plan(req, prof, recs);
    EvalOptions& eo = plan.options;
    eo.ctx = size_t(ctx.value_or(kDefaultContext));
    eo.input_sha256 = input_sha;
    eo.origin = common::origin_for(*rd);
    eo.hooks.begin = [state, &hook](const std::string&, uint64_t n) {
      *state = {0, size_t(n)};
      hook.step_of(0, state->second);
    };
    eo.hooks.advance = [state, &hook](uint64_t n) {
      state->first += size_t(n);
      hook.step_of(state->first, state->second);  // Ctrl-C between two batches
    };
    store::RunStore st(store_path);
    const EvalSummary sum = run_eval(*rd, st, plan.items, eo);
    out = eval_summary_json(sum, eo);
    out["store"] = store_path;
  }
  return from_json(out);
}

}  // namespace

void bind_pipelines_cnorm(pyb::module_& m) {
  using pyb::arg;
  m.def("_cnorm_calibrate", &cnorm_calibrate, arg("model"), arg("records"), arg("system"),
        arg("n_ctx"), arg("progress"));
  m.def("_cnorm_apply", &cnorm_apply, arg("profile"), arg("record"));
  m.def("_cnorm_evaluate", &cnorm_evaluate, arg("model"), arg("records"), arg("profile"),
        arg("store"), arg("ctx"), arg("progress"));
  m.def("_cnorm_default_delimiters", &cnorm::default_delimiter_list);
}

}  // namespace ragform::py
