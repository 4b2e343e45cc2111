// C-NORM for Python (docs/python.md, python/ragform/cnorm.py): calibrate and apply, the
// functions of `ragform cnorm calibrate|apply` (pipelines/cnorm) on records given as dicts or a
// file. Profiles are plain dicts, the JSON object `cnorm calibrate` writes.
#include <optional>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "base/error.h"
#include "bindings.h"
#include "eval/datasets.h"
#include "eval/jsonl.h"
#include "pipelines/cnorm/cnorm.h"
#include "qa_records.h"
#include "reader/native_reader.h"
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

  std::vector<eval::QaRecord> recs;
  std::string input_sha;
  if (pyb::isinstance<pyb::str>(records) ||
      pyb::isinstance(records, pyb::module_::import("os").attr("PathLike"))) {
    std::string path = pyb::str(pyb::module_::import("os").attr("fspath")(records));
    pyb::gil_scoped_release nogil;
    recs = eval::load_qa_file(path).records;
    input_sha = store::sha256_file(path);
  } else if (!records.is_none()) {
    recs = qa_records(records);
    std::string lines;
    for (pyb::handle h : records) lines += store::canonical_json(to_json(h)) + "\n";
    input_sha = lines.empty() ? "" : store::sha256_hex(lines);
  }

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

}  // namespace

void bind_pipelines_cnorm(pyb::module_& m) {
  using pyb::arg;
  m.def("_cnorm_calibrate", &cnorm_calibrate, arg("model"), arg("records"), arg("task"), arg("S"),
        arg("delims"), arg("p"), arg("seed"), arg("k"), arg("layer"), arg("heads"),
        arg("context_span"), arg("template"), arg("shared"), arg("system"), arg("n_ctx"),
        arg("progress"));
  m.def("_cnorm_apply", &cnorm_apply, arg("profile"), arg("record"));
  m.def("_cnorm_default_delimiters", &cnorm::default_delimiter_list);
}

}  // namespace ragform::py
