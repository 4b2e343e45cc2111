// From the front ends' arguments to a search: TuneArgs -> TuneOptions (the dev and held-out
// splits read or generated, the context cap and its source), shared by `ragform tune` and Python.
#include "tune/run.h"

#include <algorithm>
#include <cstdio>

#include "base/error.h"
#include "base/stable_hash.h"
#include "engine/model/model_card.h"
#include "eval/datasets.h"
#include "pipelines/cnorm/cnorm.h"

namespace ragform::tune {

namespace {

std::vector<eval::QaRecord> split(Task task, const std::string& path, size_t n, size_t slots,
                                  uint64_t seed, const char* flag) {
  if (task == Task::Needle) {
    if (!path.empty()) return eval::load_qa_file(path).records;
    return needle_records(n, slots, seed);
  }
  if (path.empty())
    throw UsageError(flag, std::string("required for the ") + task_name(task) + " task");
  return eval::load_qa_file(path).records;
}

}  // namespace

TuneOptions tune_options(const TuneArgs& a) {
  TuneOptions o;
  o.task = parse_task(a.task);
  o.objective = parse_objective(a.objective);
  o.robust_floor = a.robust_floor;
  o.budget = a.budget;
  o.max_tokens = a.max_tokens;
  o.seed = a.seed;
  o.tmpl = template_for(o.task, a.template_file);
  o.space = default_space(o.task);
  if (!a.space_file.empty()) o.space = load_space_file(a.space_file, o.space);
  for (const auto& [dim, list] : a.dimensions) set_dimension(o.space, dim, list);
  candidates(o.space, o.task);  // a space that does not apply to the task fails before loading
  o.search.abs_filter = a.abs_filter;
  // ABS as the objective is C-NORM's calibration: the same number of prompts by default.
  o.search.abs_prompts = a.abs_prompts.value_or(o.objective == Objective::Abs ? 6 : 2);
  o.search.abs_keep = a.abs_keep;
  o.search.eta = a.eta;
  o.search.finalists = a.finalists;
  o.search.robust_items = a.robust_items;
  o.search.robust_kinds = robustness_kinds().size();
  o.shard_index = a.shard_index;
  o.shard_count = a.shard_count;
  // Dev and held-out needle records come from disjoint seeds.
  o.dev = split(o.task, a.input, a.dev_items, a.needle_slots, 2 * o.seed + 1, "--input");
  o.holdout =
      split(o.task, a.holdout, a.holdout_items, a.needle_slots, 2 * o.seed + 2, "--holdout");
  o.store_path = a.store_path;
  return o;
}

// A GGUF's context_length is what the file states, not always what the model was trained on (a
// llama2.c export states 2048 whatever its max_seq_len was): the output names the cap's source.
std::pair<size_t, std::string> context_cap(std::optional<size_t> given, bool native,
                                           const std::string& model_path, size_t ctx) {
  if (given) return {*given, "--ctx"};
  if (!native) return {0, "the server's context is not known here: give --ctx to cap prompts"};
  const int train = model::training_context(model_path);
  if (train <= 0) return {ctx, "the reader's default: the model file states no context length"};
  std::string src = "the model file's context_length " + std::to_string(train);
  if (ctx < size_t(train)) src += ", capped to the reader's default";
  return {ctx, src + "; --ctx overrides it"};
}

std::vector<eval::QaRecord> needle_records(size_t n, size_t k, uint64_t seed) {
  std::vector<eval::QaRecord> out;
  for (const cnorm::Item& it : cnorm::make_needle_items(n, k, seed)) {
    eval::QaRecord r;
    r.id = "needle-" + std::to_string(seed) + "-" + it.id.substr(it.id.rfind('-') + 1);
    r.question = it.question;
    r.answers = it.answers;
    r.source_format = "needle";
    const std::vector<cnorm::Document> docs = cnorm::arrange(it, k, it.natural_position);
    for (size_t i = 0; i < docs.size(); ++i) {
      eval::Context c;
      c.id = r.id + "/" + std::to_string(i);
      c.title = docs[i].title;
      c.text = docs[i].text;
      c.isgold = i == it.natural_position;
      c.hasanswer = c.isgold;
      r.ctxs.push_back(std::move(c));
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace ragform::tune
