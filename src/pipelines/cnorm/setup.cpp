#include "pipelines/cnorm/setup.h"

#include <cerrno>
#include <cstdlib>
#include <limits>
#include <optional>

#include "base/error.h"
#include "base/number_text.h"
#include "base/stable_hash.h"

namespace ragform::cnorm {

namespace {

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
  if (s != "exhaustive") throw UsageError(name, "expected exhaustive or halving, got '" + s + "'");
  return Search::Exhaustive;
}

}  // namespace

std::vector<double> parse_ratio_list(const std::string& list, const std::string& name) {
  std::vector<double> out;
  for (const auto& tok : split_list(list)) {
    const std::optional<double> v = parse_decimal(tok);  // base/number_text.h's grammar
    if (!v || !(*v >= 0 && *v <= 1))
      throw UsageError(name, "'" + tok + "' is not a number in [0, 1]");
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
      throw UsageError(name, "expected mean, per-head or one head index, got '" + heads + "'");
    o.heads = HeadMode::Single;
    o.head = int(h);
  }
  return o;
}

CalibrationPlan calibration_plan(const CalibrationRequest& req) {
  const CalibrationArgNames& n = req.names;
  const Task task = parse_task(req.task);
  if (req.samples < 1) throw UsageError(n.samples, "must be at least 1");
  if (req.k < 1) throw UsageError(n.k, "must be at least 1");
  if (req.seed < 0) throw UsageError(n.seed, "must be >= 0");
  validate_p(req.p, n.p);
  CalibrationPlan plan;
  CalibrateOptions& co = plan.options;
  CalibrationSetup& setup = co.setup;
  setup.task = task;
  setup.candidates = parse_delimiter_list(req.delims);
  setup.p = req.p;
  setup.seed = uint64_t(req.seed);
  setup.abs = parse_abs_options(req.layer, req.heads, req.context_span, n.heads);
  setup.tmpl = load_template(task, req.template_path);
  if (!req.p_grid.empty()) setup.p_grid = parse_ratio_list(req.p_grid, n.p_grid);
  if (!req.formats.empty()) {
    if (task == Task::Kv || task == Task::Longbench)
      throw UsageError(n.formats,
                       std::string("document formats do not apply to ") + task_name(task));
    for (const auto& w : split_list(req.formats)) setup.wrappers.push_back(parse_wrapper(w));
  }
  setup.search = parse_search(req.search, n.search);
  (void)candidate_list(setup);  // validates the candidates before any input is read
  co.samples = size_t(req.samples);
  // LongBench: one context per prompt.
  co.k = task == Task::Longbench ? 1 : size_t(req.k);
  plan.item_seed = task == Task::Needle ? splitmix64_mix(setup.seed) : setup.seed;
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
