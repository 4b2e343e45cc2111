// The three pipelines for Python: C-NORM calibrate / apply (pipelines/cnorm), SURE rule-based
// perturbations and the store-backed evaluation (pipelines/sure), SpotlightRAG selection
// (pipelines/spotlight). Records and results are plain dicts, the JSON objects of the JSONL files.
//
// cnorm_calibrate follows `ragform cnorm calibrate` (src/cli/cmd_cnorm.cpp run_calibrate) step by
// step with the library's functions, without its profile cache and run store: there is no
// library runner for the whole calibration yet, and its profile must equal the CLI's.
#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <optional>

#include <pybind11/stl.h>

#include "base/error.h"
#include "base/paths.h"
#include "base/stable_hash.h"
#include "bindings.h"
#include "eval/datasets.h"
#include "pipelines/cnorm/cnorm.h"
#include "pipelines/common/common.h"
#include "pipelines/spotlight/spotlight.h"
#include "pipelines/sure/sure.h"
#include "reader/native_encoder.h"
#include "reader/native_reader.h"
#include "store/run_store.h"
#include "store/sha256.h"

namespace ragform::py {

namespace {

// Python dicts -> QaRecords, the format detected from the first record as the file loaders do
// (eval/datasets.h); a record that does not fit it is a ValueError naming the record.
std::vector<eval::QaRecord> qa_records(const pyb::iterable& records) {
  std::vector<eval::QaRecord> out;
  std::optional<eval::Format> fmt;
  size_t i = 0;
  for (pyb::handle h : records) {
    ++i;
    nlohmann::json j = to_json(h);
    if (!fmt) {
      fmt = eval::detect_format(j);
      if (!fmt) {
        // The formats by name, and the one page that describes them: `ragform data check`
        // in docs/cli.md (which also checks a file of such records).
        std::string names;
        for (eval::Format k : eval::known_formats())
          names += std::string(names.empty() ? "" : ", ") + eval::format_name(k);
        throw UsageError("record " + std::to_string(i),
                         "its fields match no known QA format (" + names +
                             "; see `ragform data check` in docs/cli.md)");
      }
    }
    try {
      out.push_back(eval::to_qa_record(j, *fmt, {i, ""}));
    } catch (const eval::RowError& e) {
      throw UsageError("record " + std::to_string(i), e.what());
    }
  }
  return out;
}

// ---------------------------------------------------------------- C-NORM

std::vector<cnorm::Item> task_items(cnorm::Task task, std::vector<eval::QaRecord> records, size_t k,
                                    uint64_t seed, size_t n_needle) {
  switch (task) {
    case cnorm::Task::Qa:
      return cnorm::build_qa_items(records, k, seed, nullptr);
    case cnorm::Task::Kv:
      return cnorm::build_kv_items(records);
    case cnorm::Task::Needle:
      if (!records.empty())
        throw UsageError("records", "the needle task generates its items; give no records");
      return cnorm::make_needle_items(n_needle, k, seed);
    case cnorm::Task::Longbench: {
      std::vector<cnorm::Item> items;
      for (const auto& mc : cnorm::build_mc_items(records)) items.push_back(cnorm::mc_to_item(mc));
      return items;
    }
  }
  return {};
}

cnorm::AbsOptions abs_options(int layer, const std::string& heads, bool context_span) {
  cnorm::AbsOptions o;
  o.layer = layer;
  o.context_span = context_span;
  if (heads == "mean") {
    o.heads = cnorm::HeadMode::Mean;
  } else if (heads == "per-head") {
    o.heads = cnorm::HeadMode::PerHead;
  } else {
    char* end = nullptr;
    long h = std::strtol(heads.c_str(), &end, 10);
    if (heads.empty() || *end != '\0' || h < 0 || h > (1 << 20))
      throw UsageError("heads", "expected mean, per-head or one head index, got '" + heads + "'");
    o.heads = cnorm::HeadMode::Single;
    o.head = int(h);
  }
  return o;
}

// records: a list of dicts or the path of a JSONL file (then input_sha256 is the file's hash, as
// the CLI records it; for dicts it is the hash of their canonical JSON lines).
pyb::object cnorm_calibrate(reader::NativeReader& reader, pyb::object records,
                            const std::string& task_s, int S, std::optional<std::string> delims,
                            double p, int64_t seed, int k, int layer, const std::string& heads,
                            bool context_span, const std::string& template_path,
                            const std::string& shared, const std::string& system, int n_ctx,
                            pyb::object progress) {
  using namespace cnorm;
  if (n_ctx < 1) throw UsageError("n_ctx", "must be >= 1");
  Task task = parse_task(task_s);
  if (S < 1) throw UsageError("S", "must be at least 1");
  if (k < 1) throw UsageError("k", "must be at least 1");
  if (seed < 0) throw UsageError("seed", "must be >= 0");
  if (!(p >= 0 && p <= 1)) throw UsageError("p", "must be in [0, 1]");
  CalibrationSetup setup;
  setup.task = task;
  setup.candidates = parse_delimiter_list(delims ? *delims : default_delimiter_list());
  setup.p = p;
  choose_sentences(0, setup.p, 0);  // validates p
  setup.seed = uint64_t(seed);
  setup.abs = abs_options(layer, heads, context_span);
  if (!template_path.empty() || task == Task::Needle || task == Task::Longbench)
    setup.tmpl = load_template(task, template_path, "");
  else
    setup.tmpl = load_template(task, "", find_shared_dir(shared));

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

  pyb::gil_scoped_release nogil;
  uint64_t item_seed = task == Task::Needle ? splitmix64_mix(setup.seed) : setup.seed;
  const size_t k_task = task == Task::Longbench ? 1 : size_t(k);
  std::vector<Item> items = task_items(task, std::move(recs), k_task, item_seed, size_t(S));
  if (items.empty()) throw UsageError("cnorm calibrate", "no items in the records");
  // The CLI's runner (pipelines/cnorm/run.h) without a store or a profile cache.
  CalibrateOptions opt;
  opt.setup = setup;
  opt.samples = size_t(S);
  opt.k = k_task;
  opt.ctx = size_t(n_ctx);
  opt.origin.model_path = reader.model_path();
  opt.origin.model_sha256 = store::sha256_file(reader.model_path());
  opt.input_sha256 = input_sha;
  opt.system_sha256 = system.empty() ? "" : store::sha256_hex(system);
  LoopHook hook(progress, 0);
  size_t done = 0, total = 0;
  opt.hooks.begin = [&](const std::string&, uint64_t n) { total = size_t(n); };
  opt.hooks.advance = [&](uint64_t n) {
    hook.step_of(done, total);  // Ctrl-C and the progress bar, between two passes
    done += size_t(n);
  };
  const Profile prof = run_calibrate(reader, items, opt).profile;
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

// As `ragform cnorm apply` on one record: every ctxs[i].text, or the "text" string, formatted
// with the profile's delimiter and ratio; every other field unchanged.
pyb::object cnorm_apply(const pyb::handle& profile, const pyb::handle& record) {
  using namespace cnorm;
  Profile prof = profile_arg(profile);
  Task task = parse_task(prof.task);
  Format f = profile_format(prof);
  if (!f.wrapper.empty())
    throw UsageError("cnorm apply", "the profile's best candidate is the document format '" +
                                        f.wrapper +
                                        "'; apply writes text fields, wrap documents when "
                                        "building the prompt instead");
  nlohmann::json j = to_json(record);
  if (!j.is_object()) throw UsageError("cnorm apply", "the record must be a dict");
  if (j.contains("ctxs")) {
    if (!j["ctxs"].is_array()) throw UsageError("cnorm apply", "field 'ctxs': expected array");
    for (size_t i = 0; i < j["ctxs"].size(); ++i) {
      auto& c = j["ctxs"][i];
      if (!c.is_object() || !c.contains("text") || !c["text"].is_string())
        throw UsageError("cnorm apply",
                         "field 'ctxs[" + std::to_string(i) + "].text': expected string");
      c["text"] = format_text(task, c["text"].get<std::string>(), f);
    }
  } else if (j.contains("text") && j["text"].is_string()) {
    j["text"] = format_text(task, j["text"].get<std::string>(), f);
  } else {
    throw UsageError("cnorm apply", "expected a \"ctxs\" array or a \"text\" string");
  }
  return from_json(j);
}

// ---------------------------------------------------------------- SURE

// The SURE prompt set of `dir` ("" = the built-in one). A directory that does not exist is a
// file error here (FileNotFoundError), where load_prompts throws the plain Error the CLI prints.
sure::PromptSet prompts_of(const std::string& dir) {
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec))
    throw FileError("sure: prompts", "directory " + dir + " does not exist (prompts=DIR)", ENOENT);
  return sure::load_prompts(dir);
}

// As `ragform sure perturb`: for each record, each of its first `docs` documents (0 = all), each
// kind, one pair dict (sure/pairs.h). Rule-based kinds need no reader; style, llm-generated and
// llm-ranked are rewritten by `perturber` (default: `under_test`), self-generated by `under_test`
// (run_llm_perturbations, in batches of `batch`, greedy, `max_tokens` per rewrite: the CLI's
// defaults). kinds: a --kinds list; None = every kind. A kind whose reader is not given is left
// out when it comes from a category or "all" (the CLI skips it with a note) and is a ValueError
// when named.
pyb::list sure_perturb(const pyb::iterable& records, std::optional<std::string> kinds_s,
                       int64_t seed, const std::string& cutoff, int docs,
                       reader::Reader* under_test, reader::Reader* perturber, int max_tokens,
                       int batch, const std::string& prompts_dir, pyb::object progress) {
  using namespace sure;
  if (docs < 0) throw UsageError("docs", "must be >= 0");
  if (max_tokens < 1 || batch < 1)
    throw UsageError("sure perturb", "max_tokens and batch must be >= 1");
  if (!perturber) perturber = under_test;
  auto reader_of = [&](Kind k) -> reader::Reader* {
    switch (info(k).needs) {
      case NeedsReader::None:
        return nullptr;
      case NeedsReader::Perturber:
        return perturber;
      case NeedsReader::UnderTest:
        return under_test;
    }
    return nullptr;
  };
  std::vector<Kind> kinds;
  const std::string list = kinds_s ? *kinds_s : "all";
  bool any_llm = false;
  for (Kind k : select_kinds(list)) {
    if (info(k).needs == NeedsReader::None || reader_of(k)) {
      kinds.push_back(k);
      any_llm |= info(k).needs != NeedsReader::None;
      continue;
    }
    const std::string name = info(k).name;
    for (size_t b = 0; b <= list.size();) {
      size_t e = std::min(list.find(',', b), list.size());
      if (list.compare(b, e - b, name) == 0)
        throw UsageError("sure perturb",
                         name + (info(k).needs == NeedsReader::UnderTest
                                     ? " needs the reader under test: pass model="
                                     : " needs a reader: pass perturb_model= or model="));
      b = e + 1;
    }
  }
  RuleOptions ro;
  ro.seed = uint64_t(seed);
  ro.knowledge_cutoff = cutoff;
  parse_arg([&] { return parse_date(cutoff); });  // fail early on a bad date
  std::vector<eval::QaRecord> recs = qa_records(records);
  PerturbPlan pl = plan_pairs(recs, kinds, docs, ro);
  const size_t n_reqs = pl.pert_reqs.size() + pl.test_reqs.size();
  if (any_llm && n_reqs > 0) {
    LlmOptions lo;
    lo.max_tokens = max_tokens;
    lo.batch = size_t(batch);
    lo.seed = ro.seed;
    const LoopHook hook(progress, n_reqs);
    pyb::gil_scoped_release nogil;
    const PromptSet prompts = prompts_of(prompts_dir);
    // As the CLI: the perturber's kinds first, then the reader under test's.
    hook.step(0);
    size_t before = 0;
    const auto step = [&](size_t done) { hook.step(before + done); };
    if (!pl.pert_reqs.empty())
      apply_llm(*perturber, prompts, lo, pl.pert_reqs, pl.pert_idx, pl.pairs, step);
    before = pl.pert_reqs.size();
    if (!pl.test_reqs.empty())
      apply_llm(*under_test, prompts, lo, pl.test_reqs, pl.test_idx, pl.pairs, step);
  }
  pyb::list out;
  for (const auto& p : pl.pairs) out.append(from_json(pair_to_json(p)));
  return out;
}

// As `ragform sure eval`: the three stages into `store_path` (resumable), then the robustness
// report rows. Ctrl-C stops after the batch in flight (each row is committed on its own).
pyb::dict sure_evaluate(reader::Reader& reader, const pyb::iterable& pairs_in,
                        const std::string& store_path, double temperature, int max_tokens,
                        int64_t seed, int batch, bool chain_of_note, int resamples,
                        const std::string& prompts_dir, pyb::object progress) {
  using namespace sure;
  if (batch < 1 || max_tokens < 1 || resamples < 1)
    throw UsageError("sure evaluate", "batch, max_tokens and resamples must be >= 1");
  if (!(temperature >= 0 && temperature <= 100))
    throw UsageError("temperature", "must be in [0, 100]");
  std::vector<Pair> pairs;
  size_t i = 0;
  for (pyb::handle h : pairs_in)
    pairs.push_back(pair_from_json(to_json(h), "pair " + std::to_string(++i)));
  pyb::gil_scoped_release nogil;
  PromptSet prompts = prompts_of(prompts_dir);
  EvalOptions eo;
  eo.temperature = temperature;
  eo.max_tokens = max_tokens;
  eo.seed = uint64_t(seed);
  eo.batch = size_t(batch);
  eo.chain_of_note = chain_of_note;
  store::RunStore st(store_path, store::RunStore::Mode::create,
                     store::RunStore::Durability::normal);
  store::RunConfig rc = eval_run_config(eo, prompts, pairs_sha256(pairs));  // the CLI's identity
  auto* native = dynamic_cast<reader::NativeReader*>(&reader);
  rc.tool_version = common::tool_version();
  rc.model_path = native ? native->model_path() : "";
  rc.model_sha256 = native ? store::sha256_file(native->model_path()) : "";
  rc.reader = reader.describe();
  rc.chat_mode = reader.chat_mode();
  rc.seed = seed;
  const int64_t run = st.begin_run(rc);
  EvalStats stats;
  const LoopHook hook(progress, 0);
  hook.step(0);
  auto outcomes = evaluate_pairs(reader, st, run, prompts, pairs, eo, stats,
                                 [&](size_t d, size_t t) { hook.step_of(d, t); });
  auto rows = robustness_report(outcomes, eo.seed, size_t(resamples));
  pyb::gil_scoped_acquire gil;
  pyb::list groups;
  for (const auto& r : rows) groups.append(from_json(r.to_json()));
  pyb::dict s;
  s["generated"] = stats.generated;
  s["skipped_done"] = stats.skipped_done;
  s["unmeasured"] = stats.unmeasured;
  s["deferred"] = stats.deferred;
  s["pairs_measured"] = stats.pairs_measured;
  s["pairs_unmeasured"] = stats.pairs_unmeasured;
  s["generate_seconds"] = stats.generate_seconds;
  s["prompt_tokens"] = stats.prompt_tokens;
  pyb::dict out;
  out["run"] = run;
  out["store"] = store_path;
  out["groups"] = groups;
  out["stats"] = s;
  return out;
}

// ---------------------------------------------------------------- SpotlightRAG

// As `ragform spotlight select --json` on one record. The token encoder: word vectors (a dict
// {word: [floats]} or a JSON file path), an Encoder (--encoder model) or a Model's hidden states
// of `layer` (--encoder hidden). k / lam None: default_score_params(), the CLI's defaults.
pyb::object spotlight_select(const pyb::handle& record, pyb::object vectors, pyb::object encoder,
                             int K, std::optional<int> k, std::optional<double> lam,
                             const std::string& order, bool special_tokens, const std::string& oov,
                             int layer) {
  using namespace spotlight;
  if (K < 1) throw UsageError("spotlight", "K must be >= 1");
  if (order != "doc" && order != "score")
    throw UsageError("spotlight", "order must be doc or score, got '" + order + "'");
  if (oov != "match" && oov != "skip")
    throw UsageError("spotlight", "oov must be match or skip, got '" + oov + "'");
  ScoreParams sp = default_score_params();
  if (k) sp.top_k = *k;
  if (lam) sp.lambda = *lam;
  if (sp.top_k < 1) throw UsageError("spotlight", "k must be >= 1");
  if (sp.lambda < 0 || sp.lambda > 1) throw UsageError("spotlight", "lam must be in [0, 1]");
  if (vectors.is_none() == encoder.is_none())
    throw UsageError("spotlight", "give exactly one of vectors= or encoder=");
  std::unique_ptr<WordVectors> wv;
  std::unique_ptr<TokenEncoder> enc;
  if (!vectors.is_none()) {
    if (pyb::isinstance<pyb::dict>(vectors)) {
      std::unordered_map<std::string, std::vector<float>> m;
      for (auto item : pyb::reinterpret_borrow<pyb::dict>(vectors))
        m[item.first.cast<std::string>()] = item.second.cast<std::vector<float>>();
      wv = std::make_unique<WordVectors>(WordVectors::from_map(m));
    } else {
      std::string path = pyb::str(pyb::module_::import("os").attr("fspath")(vectors));
      wv = std::make_unique<WordVectors>(WordVectors::load(path));
    }
    enc = std::make_unique<StaticEncoder>(*wv, oov == "match" ? OovPolicy::Match : OovPolicy::Skip);
  } else if (pyb::isinstance<reader::NativeEncoder>(encoder)) {
    enc = std::make_unique<ModelEncoder>(encoder.cast<reader::NativeEncoder&>());
  } else if (pyb::isinstance<reader::Reader>(encoder)) {
    enc = std::make_unique<HiddenEncoder>(encoder.cast<reader::Reader&>(), layer);
  } else {
    throw UsageError("spotlight", "encoder must be a ragform.Encoder or a ragform.Model");
  }
  std::vector<eval::QaRecord> recs = qa_records(pyb::make_tuple(record));
  const eval::QaRecord& r = recs.at(0);
  if (r.ctxs.empty()) throw UsageError("spotlight", "record '" + r.id + "' has no contexts");
  SelectParams sel{K, order == "doc" ? Order::Document : Order::Score, special_tokens};
  nlohmann::ordered_json out;
  {
    pyb::gil_scoped_release nogil;
    std::vector<Document> docs = documents_of(r);
    ScoredQuestion sq = score_question(*enc, r.question, docs, sp);
    Selection s = select_and_annotate(r.question, docs, sq, sel);
    // The object `spotlight select --json` prints (selection_json.h), with the full-precision
    // scores (the CLI rounds them to 9 significant digits).
    out = selection_json(r.id, s);
  }
  return from_json(out);
}

}  // namespace

void bind_pipelines(pyb::module_& m) {
  using pyb::arg;
  m.def("_cnorm_calibrate", &cnorm_calibrate, arg("model"), arg("records"), arg("task"), arg("S"),
        arg("delims"), arg("p"), arg("seed"), arg("k"), arg("layer"), arg("heads"),
        arg("context_span"), arg("template"), arg("shared"), arg("system"), arg("n_ctx"),
        arg("progress"));
  m.def("_cnorm_apply", &cnorm_apply, arg("profile"), arg("record"));
  m.def("_cnorm_default_delimiters", &cnorm::default_delimiter_list);
  m.def("_sure_perturb", &sure_perturb, arg("records"), arg("kinds"), arg("seed"), arg("cutoff"),
        arg("docs"), arg("model").none(true), arg("perturb_model").none(true), arg("max_tokens"),
        arg("batch"), arg("prompts"), arg("progress"));
  m.def(
      "_sure_kinds",
      [] {
        pyb::list l;
        for (const auto& k : sure::all_kinds()) {
          pyb::dict d;
          d["name"] = k.name;
          d["category"] = k.category;
          d["needs_reader"] = k.needs != sure::NeedsReader::None;
          l.append(d);
        }
        return l;
      },
      "The fifteen SURE perturbation kinds (Table 1 order).");
  m.def("_sure_evaluate", &sure_evaluate, arg("model"), arg("pairs"), arg("store"),
        arg("temperature"), arg("max_tokens"), arg("seed"), arg("batch"), arg("chain_of_note"),
        arg("resamples"), arg("prompts"), arg("progress"));
  m.def("_spotlight_select", &spotlight_select, arg("record"), arg("vectors"), arg("encoder"),
        arg("K"), arg("k"), arg("lam"), arg("order"), arg("special_tokens"), arg("oov"),
        arg("layer"));
}

}  // namespace ragform::py
