#include "pipelines/cnorm/setup.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <optional>
#include <set>

#include "base/error.h"
#include "base/excerpt.h"
#include "base/number_text.h"
#include "base/options.h"
#include "base/stable_hash.h"

namespace ragform::cnorm {

namespace {

// "no items", and why when every question was left out for want of distractors (pass 22: cnorm
// eval said only "no items" where calibrate named the reason).
std::string no_items(size_t records, const std::vector<std::string>& left_out, size_t k) {
  if (records == 0 || left_out.size() < records) return "no items";
  return "no items: all " + std::to_string(records) +
         " questions left out: fewer than k - 1 = " + std::to_string(k - 1) +
         " other passages without their answers (first: " + left_out[0] + "); lower -k";
}

// "a,b,c" -> {"a", "b", "c"} (empty items kept, so they are reported).
std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  for (;;) {
    size_t e = s.find(',', b);
    out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) return out;
    b = e + 1;
  }
}

Search parse_search(const std::string& s, const std::string& name) {
  if (s == "halving") return Search::Halving;
  if (s != "exhaustive") throw OptionError(name, "expected exhaustive or halving, got '" + s + "'");
  return Search::Exhaustive;
}

}  // namespace

std::vector<double> parse_ratio_list(const std::string& list, const std::string& name) {
  std::vector<double> out;
  for (const auto& tok : split_list(list)) {
    const std::optional<double> v = parse_decimal(tok);  // base/number_text.h's grammar
    if (!v || !(*v >= 0 && *v <= 1))
      throw OptionError(name, "'" + tok + "' is not a number in [0, 1]");
    out.push_back(*v);
  }
  return out;
}

AbsOptions parse_abs_options(int layer, const std::string& heads, bool context_span,
                             const std::string& name) {
  AbsOptions o;
  o.layer = layer;
  o.context_span = context_span;
  if (heads == "mean") {
    o.heads = HeadMode::Mean;
  } else if (heads == "per-head") {
    o.heads = HeadMode::PerHead;
  } else {
    // Digits only: no sign, no blanks, no other base; an index far beyond any model's heads is
    // refused here rather than by the attention call.
    char* end = nullptr;
    errno = 0;
    long h = std::strtol(heads.c_str(), &end, 10);
    if (heads.empty() || heads[0] < '0' || heads[0] > '9' || *end != '\0' || errno != 0 ||
        h > (1 << 20))
      throw OptionError(name, "expected mean, per-head or one head index, got '" + heads + "'");
    o.heads = HeadMode::Single;
    o.head = int(h);
  }
  return o;
}

CalibrationPlan calibration_plan(CalibrationRequest req) {
  check_options(req);  // the declared ranges: S, k, seed, p, layer
  const Task task = parse_task(req.task);
  CalibrationPlan plan;
  CalibrateOptions& co = plan.options;
  CalibrationSetup& setup = co.setup;
  setup.task = task;
  setup.candidates = parse_delimiter_list(req.delims);
  setup.p = req.p;
  setup.seed = uint64_t(req.seed);
  setup.abs = parse_abs_options(int(req.layer), req.heads, req.context_span, "heads");
  setup.tmpl = load_template(task, req.template_path);
  if (!req.p_grid.empty()) setup.p_grid = parse_ratio_list(req.p_grid, "p_grid");
  if (!req.formats.empty()) {
    if (task == Task::Kv || task == Task::Longbench)
      throw OptionError("formats",
                        std::string("document formats do not apply to ") + task_name(task));
    for (const auto& w : split_list(req.formats)) setup.wrappers.push_back(parse_wrapper(w));
  }
  setup.search = parse_search(req.search, "search");
  (void)candidate_list(setup);  // validates the candidates before any input is read
  co.samples = size_t(req.samples);
  // LongBench: one context per prompt.
  co.k = task == Task::Longbench ? 1 : size_t(req.k);
  plan.item_seed = task == Task::Needle ? splitmix64_mix(setup.seed) : setup.seed;
  return plan;
}

int answer_tokens(Task task) { return task == Task::Kv ? 48 : 16; }

EvalPlan eval_plan(EvalRequest req, const Profile& profile,
                   const std::vector<eval::QaRecord>& records, std::vector<std::string>* skipped) {
  check_options(req);  // k, limit, max_tokens
  const Task task = parse_task(req.task);
  if (task == Task::Longbench)
    throw OptionError("task",
                      "longbench is a multiple-choice evaluation (run_longbench), not a "
                      "gold-position sweep");
  if (req.positions != "all" && req.positions != "natural")
    throw OptionError("positions", "expected all or natural, got '" + req.positions + "'");
  EvalPlan plan;
  EvalOptions& eo = plan.options;
  eo.task = task;
  eo.tmpl = load_template(task, req.template_path);
  eo.profile = profile;
  for (const std::string& text : req.seeds) {
    // A seed is a non-negative whole number below 2^31 (the CLI's and Python's ints alike).
    const std::optional<double> v = parse_decimal(text);
    if (!v || *v < 0 || *v != double(int64_t(*v)) || *v > kMaxCount)
      throw OptionError("seeds", "'" + text + "' is not a seed (a whole number >= 0)");
    const uint64_t sd = uint64_t(*v);
    if (std::find(eo.seeds.begin(), eo.seeds.end(), sd) != eo.seeds.end())
      throw OptionError("seeds", "seed " + std::to_string(sd) + " given twice");
    eo.seeds.push_back(sd);
  }
  if (eo.seeds.empty()) eo.seeds = {profile.seed};
  eo.k = size_t(req.k);
  eo.max_tokens = req.max_tokens ? int(*req.max_tokens) : answer_tokens(task);
  eo.natural_positions = req.positions == "natural";
  eo.all_candidates = req.all_candidates;
  if (!req.density.empty()) eo.density = parse_ratio_list(req.density, "density");
  // One item set per seed (the runner decides k and Min-Token over all of them).
  const size_t n_needle = req.limit > 0 ? size_t(req.limit) : 20;
  for (uint64_t sd : eo.seeds) {
    std::vector<std::string> left_out;
    std::vector<Item> items = task_items(task, records, eo.k, sd, n_needle, &left_out);
    if (skipped && sd == eo.seeds.front()) *skipped = left_out;
    if (req.limit > 0 && items.size() > size_t(req.limit)) items.resize(size_t(req.limit));
    if (items.empty()) throw Error("cnorm eval", no_items(records.size(), left_out, eo.k));
    std::set<std::string> ids;
    for (const auto& it : items)
      if (!ids.insert(it.id).second)
        throw Error("cnorm eval",
                    "duplicate item id '" + it.id + "' (the run store needs unique ids)");
    plan.items.push_back(std::move(items));
  }
  return plan;
}

std::vector<size_t> parse_positions(const std::string& list, size_t k) {
  std::vector<size_t> out;
  if (list.empty() || list == "all") {
    for (size_t p = 0; p < k; ++p) out.push_back(p);
    return out;
  }
  size_t at = 0;
  for (;;) {
    const size_t comma = list.find(',', at);
    const std::string item =
        list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    size_t used = 0;
    unsigned long long v = 0;
    try {
      if (!item.empty() && std::isdigit(static_cast<unsigned char>(item[0])))
        v = std::stoull(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < 1 || v > k)
      throw OptionError("positions", "'" + excerpt(item) + "' is not a position in 1.." +
                                         std::to_string(k) + " (1-based, of the " +
                                         std::to_string(k) + " documents)");
    if (std::find(out.begin(), out.end(), size_t(v - 1)) != out.end())
      throw OptionError("positions", "position " + excerpt(item) + " is given twice");
    out.push_back(size_t(v - 1));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  std::sort(out.begin(), out.end());
  return out;
}

BiasCurvePlan bias_curve_plan(BiasCurveRequest req, const std::vector<eval::QaRecord>& records,
                              std::vector<std::string>* skipped) {
  check_options(req);  // k, limit, seed
  if (!req.positions.empty())
    throw OptionError("positions",
                      "goes with the gold-position sweep (position-bias --sweep): a bias curve "
                      "measures every slot");
  // Only qa and needle: checked before parse_task, whose message lists every C-NORM task.
  if (req.task != "qa" && req.task != "needle")
    throw OptionError("task", "expected qa or needle, got '" + req.task + "'");
  BiasCurvePlan plan;
  PositionBiasOptions& o = plan.options;
  o.task = parse_task(req.task);
  o.tmpl = load_template(o.task, req.template_path);
  o.k = size_t(req.k);
  o.seed = uint64_t(req.seed);
  o.measure = parse_measure(req.measure, "measure");
  if (o.task == Task::Needle && !records.empty())
    throw OptionError("records", "the needle task generates its items; give no records");
  if (o.task == Task::Qa && records.empty()) throw OptionError("records", "required for qa");
  plan.items = task_items(o.task, records, o.k, o.seed, size_t(req.limit), skipped);
  if (plan.items.size() > size_t(req.limit)) plan.items.resize(size_t(req.limit));
  if (plan.items.empty())
    throw Error("position-bias",
                no_items(records.size(), skipped ? *skipped : std::vector<std::string>{}, o.k));
  return plan;
}

std::vector<Item> task_items(Task task, const std::vector<eval::QaRecord>& records, size_t k,
                             uint64_t seed, size_t n_needle, std::vector<std::string>* skipped) {
  switch (task) {
    case Task::Qa:
      return build_qa_items(records, k, seed, skipped);
    case Task::Kv:
      return build_kv_items(records);
    case Task::Needle:
      return make_needle_items(n_needle, k, seed);
    case Task::Longbench: {
      std::vector<Item> items;
      for (const auto& mc : build_mc_items(records)) items.push_back(mc_to_item(mc));
      return items;
    }
  }
  return {};
}

}  // namespace ragform::cnorm
