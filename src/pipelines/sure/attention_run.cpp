#include "pipelines/sure/attention_run.h"

#include <map>
#include <optional>

#include "base/number_text.h"

namespace ragform::sure {

int64_t sure_eval_run(const store::RunStore& store, int64_t run) {
  std::vector<int64_t> ids;
  for (const auto& r : store.runs())
    if (r.pipeline == "sure eval" && (run <= 0 || r.id == run)) ids.push_back(r.id);
  if (ids.size() == 1) return ids[0];
  if (ids.empty())
    throw OptionError(
        "run", store.path().string() + (run > 0 ? " has no 'sure eval' run " + std::to_string(run)
                                                : " has no 'sure eval' run"));
  std::string list;
  for (int64_t id : ids) list += (list.empty() ? "" : ", ") + std::to_string(id);
  throw OptionError("run", store.path().string() + " holds " + std::to_string(ids.size()) +
                               " 'sure eval' runs (" + list + "); choose one");
}

nlohmann::ordered_json run_attention_shift(reader::Reader& reader, const store::RunStore& store,
                                           std::vector<Pair> pairs, const PromptSet& prompts,
                                           AttentionRequest req) {
  check_options(req);
  AttentionOptions ao;
  ao.layer = int(req.layer);
  for (const std::string& h : req.heads) {
    // A head index: a whole number >= 0 (the model's head count is checked by the reader).
    const std::optional<double> v = parse_decimal(h);
    if (!v || *v < 0 || *v != double(int64_t(*v)) || *v > 1 << 20)
      throw OptionError("heads", "'" + h + "' is not a head index");
    ao.heads.push_back(int(*v));
  }
  ao.query = parse_attention_query(req.query);
  AttentionSampleOptions so;
  so.by = parse_attention_sampling(req.sample_by);
  so.per_group = size_t(req.per_group);
  so.seed = uint64_t(req.seed);
  std::map<std::string, size_t> drawn;
  const auto sample = sample_attention_pairs(
      labelled_golden_pairs(store, sure_eval_run(store, req.run), std::move(pairs)), so, &drawn);
  const AttentionShift shift =
      measure_attention_shift(reader, prompts, sample, ao, req.chain_of_note);
  nlohmann::ordered_json out = attention_report(shift.rows).to_json();
  out["sampling"] = so.to_json();
  out["sampling"]["drawn"] = drawn;
  out["pairs_measured"] = shift.rows.size();
  out["no_span"] = shift.no_span;
  return out;
}

}  // namespace ragform::sure
