#include "reproduce/calibrated_sweep.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>

#include "base/error.h"
#include "reader/scoped_steering.h"
#include "text/metrics.h"

namespace ragform::reproduce {

namespace {

const std::vector<std::string>& variants() {
  static const std::vector<std::string> v = {"baseline", "calibrated"};
  return v;
}

std::string key(const std::string& variant, size_t pos) {
  return variant + "@" + std::to_string(pos);
}

double round9(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return std::strtod(buf, nullptr);
}

// Each document's calibrated relevance (eq. 4: its attention, the layers' mean under the curve's
// measure, minus the curve).
std::vector<double> calibrated_documents(reader::Reader& r, const cnorm::Prompt& p,
                                         const std::vector<cnorm::CharSpan>& spans,
                                         const CalibratedSweepOptions& o) {
  return cnorm::calibrated_relevance(
      cnorm::layer_mean_attention(r, p.text, spans, o.layers, o.bias.measure), o.bias.curve);
}

// The steering of the calibrated answer and what the row records of it.
reader::SteeringParams calibrated_steering(const std::vector<double>& relevance,
                                           const std::vector<cnorm::CharSpan>& spans, size_t gold,
                                           const CalibratedSweepOptions& o, nlohmann::json& extra) {
  const size_t top = cnorm::rank_documents(relevance)[0];
  extra["top"] = top;
  extra["span"] = {spans[top].begin, spans[top].end};
  reader::SteeringParams steer;
  nlohmann::json js = nlohmann::json::array();
  for (const cnorm::CharSpan& c : spans) js.push_back({c.begin, c.end});
  if (o.allocation == SweepAllocation::Softmax || o.allocation == SweepAllocation::Gold) {
    steer.rule = runtime::Steering::Redistribute;
    for (const cnorm::CharSpan& c : spans) steer.spans.push_back({c.begin, c.end});
    if (o.allocation == SweepAllocation::Gold) {
      steer.shares.assign(spans.size(), 0.0f);  // the oracle: all of each row's C to the gold
      steer.shares[gold] = 1.0f;
    } else {
      for (double a : cnorm::softmax_allocation(relevance, o.temperature))
        steer.shares.push_back(float(a));
    }
    extra["spans"] = js;
    extra["weights"] = steer.shares;
    return steer;
  }
  steer.rule = runtime::Steering::Reallocate;
  if (o.allocation == SweepAllocation::Top) {
    steer.value = float(o.share);
    steer.spans = {{spans[top].begin, spans[top].end}};
    return steer;
  }
  steer.shares = proportional_shares(relevance, o.share);
  steer.value = float(o.share);
  for (const cnorm::CharSpan& c : spans) steer.spans.push_back({c.begin, c.end});
  extra["spans"] = js;
  extra["shares"] = steer.shares;
  return steer;
}

store::Result answer(reader::Reader& r, const cnorm::Item& it, const std::string& prompt,
                     const reader::GenerateParams& gen) {
  store::Result row;
  const auto t0 = std::chrono::steady_clock::now();
  const reader::Generation g = r.generate(prompt, gen);
  // The reader's time for this answer, as C-NORM's rows keep it (not part of the row's identity).
  row.timings_ms["total"] =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  row.prompt = prompt;
  row.prompt_tokens = g.prompt_tokens;
  row.output = g.text;
  row.correct =
      !it.answers.empty() && text::substring_match(cnorm::first_line(g.text), it.answers) > 0;
  return row;
}

}  // namespace

SweepAllocation parse_sweep_allocation(const std::string& s) {
  if (s == "softmax") return SweepAllocation::Softmax;
  if (s == "proportional") return SweepAllocation::Proportional;
  if (s == "top") return SweepAllocation::Top;
  if (s == "gold") return SweepAllocation::Gold;
  throw UsageError("--allocation", "expected softmax, proportional, top or gold, got '" + s + "'");
}

const char* sweep_allocation_name(SweepAllocation a) {
  switch (a) {
    case SweepAllocation::Top:
      return "top";
    case SweepAllocation::Proportional:
      return "proportional";
    case SweepAllocation::Gold:
      return "gold";
    case SweepAllocation::Softmax:
      break;
  }
  return "softmax";
}

std::vector<float> proportional_shares(const std::vector<double>& calibrated, double share) {
  double total = 0.0;
  for (double c : calibrated) total += std::max(c, 0.0);
  std::vector<float> out;
  for (double c : calibrated)
    out.push_back(total > 0.0 ? float(share * std::max(c, 0.0) / total)
                              : float(share / double(calibrated.size())));
  return out;
}

CalibratedSweepSummary run_calibrated_sweep(reader::Reader& r, store::RunStore& st,
                                            const std::vector<cnorm::Item>& items,
                                            const CalibratedSweepOptions& opt) {
  const size_t k = opt.bias.curve.size();
  if (k == 0) throw UsageError("position-bias sweep", "the bias curve is empty");
  if (opt.layers.empty()) throw UsageError("position-bias sweep", "no layers to measure");
  if (!(opt.share >= 0 && opt.share <= 1)) throw UsageError("--share", "must be in 0..1");
  if (items.empty()) throw Error("position-bias sweep", "no items");
  store::RunConfig rc;
  rc.pipeline = "position-bias sweep";
  rc.config = {{"task", cnorm::task_name(opt.task)},
               {"template", opt.tmpl},
               {"bias", cnorm::bias_curve_json(opt.bias)["curve"]},
               {"share", opt.share},
               {"layers", opt.layers},
               {"max_tokens", opt.max_tokens},
               {"items", items.size()},
               {"input_sha256", opt.input_sha256},
               {"stop", "after the first non-empty line"}};
  // Top was the only allocation once: its runs keep the identity they had.
  if (opt.allocation != SweepAllocation::Top)
    rc.config["allocation"] = sweep_allocation_name(opt.allocation);
  if (opt.allocation == SweepAllocation::Softmax) {
    cnorm::softmax_allocation({0.0}, opt.temperature);  // refuses t <= 0 before the run begins
    rc.config["temperature"] = opt.temperature;
    rc.config["measure"] = cnorm::measure_name(opt.bias.measure);
  }
  std::vector<size_t> swept = opt.positions;
  if (swept.empty())
    for (size_t pos = 0; pos < k; ++pos) swept.push_back(pos);
  for (size_t pos : swept)
    if (pos >= k)
      throw UsageError("positions", "position " + std::to_string(pos + 1) + " is not in 1.." +
                                        std::to_string(k));
  const uint64_t total = items.size() * swept.size() * variants().size();
  common::Resumed res = common::begin_or_resume(st, rc, opt.origin, opt.hooks,
                                                "position-bias sweep", total, "answers");
  reader::GenerateParams gen;
  gen.max_tokens = opt.max_tokens;
  gen.stop_after_line = true;  // the answer's line, after any leading newline (run_sweep)
  common::Stage stage(opt.hooks, "position-bias sweep", total);
  for (const cnorm::Item& it : items)
    for (size_t pos : swept) {
      const std::vector<cnorm::Document> docs = cnorm::arrange(it, k, pos);
      const cnorm::Prompt p =
          cnorm::render(opt.task, opt.tmpl, it, docs, cnorm::Format{cnorm::original_delimiter()});
      if (!res.done.count({it.id, key("baseline", pos)})) {
        store::Result row = answer(r, it, p.text, gen);
        row.run = res.run;
        row.instance = it.id;
        row.variant = key("baseline", pos);
        row.extra = {{"position", pos}};
        st.put(row);
      }
      stage.add();
      if (!res.done.count({it.id, key("calibrated", pos)})) {
        const std::vector<cnorm::CharSpan> spans = cnorm::document_spans(p, docs);
        nlohmann::json extra = {{"position", pos}};
        const reader::SteeringParams steer =
            calibrated_steering(calibrated_documents(r, p, spans, opt), spans, pos, opt, extra);
        store::Result row;
        {
          reader::ScopedSteering scoped(r, steer);
          row = answer(r, it, p.text, gen);
        }
        row.run = res.run;
        row.instance = it.id;
        row.variant = key("calibrated", pos);
        row.extra = std::move(extra);
        st.put(row);
      }
      stage.add();
    }
  CalibratedSweepSummary s = calibrated_sweep_from_rows(st.results(res.run), k, swept);
  s.run = res.run;
  return s;
}

CalibratedSweepSummary calibrated_sweep_from_rows(const std::vector<store::Result>& rows, size_t k,
                                                  const std::vector<size_t>& positions) {
  CalibratedSweepSummary s;
  s.k = k;
  s.variants = variants();
  s.positions = positions;
  if (s.positions.empty())
    for (size_t p = 0; p < k; ++p) s.positions.push_back(p);
  // A row's position -> its index in s.positions (rows at other positions are not counted).
  std::vector<std::optional<size_t>> index(k);
  for (size_t i = 0; i < s.positions.size(); ++i)
    if (s.positions[i] < k) index[s.positions[i]] = i;
  const size_t m = s.positions.size();
  s.accuracy.assign(variants().size(), std::vector<double>(m, 0.0));
  std::vector<std::vector<size_t>> n(variants().size(), std::vector<size_t>(m, 0));
  std::set<std::string> ids;
  for (const store::Result& row : rows) {
    if (row.status != store::Status::ok || !row.correct) continue;
    const size_t at = row.variant.find('@');
    if (at == std::string::npos) continue;
    const size_t pos = size_t(std::stoul(row.variant.substr(at + 1)));
    for (size_t v = 0; v < variants().size(); ++v)
      if (row.variant.compare(0, at, variants()[v]) == 0 && at == variants()[v].size() && pos < k &&
          index[pos]) {
        ++n[v][*index[pos]];
        s.accuracy[v][*index[pos]] += *row.correct ? 1.0 : 0.0;
        ids.insert(row.instance);
      }
  }
  s.items = ids.size();
  for (size_t v = 0; v < variants().size(); ++v) {
    double sum = 0;
    for (size_t p = 0; p < m; ++p) {
      s.accuracy[v][p] = n[v][p] ? s.accuracy[v][p] / double(n[v][p]) : 0.0;
      sum += s.accuracy[v][p];
    }
    s.oaa.push_back(m ? sum / double(m) : 0.0);
  }
  return s;
}

nlohmann::json calibrated_sweep_json(const CalibratedSweepSummary& s) {
  nlohmann::json vs = nlohmann::json::array();
  for (size_t v = 0; v < s.variants.size(); ++v) {
    nlohmann::json acc = nlohmann::json::array();
    for (double a : s.accuracy[v]) acc.push_back(round9(a));
    vs.push_back({{"name", s.variants[v]}, {"oaa", round9(s.oaa[v])}, {"accuracy", acc}});
  }
  nlohmann::json positions = nlohmann::json::array();
  for (size_t p : s.positions) positions.push_back(p + 1);
  return {
      {"items", s.items}, {"k", s.k}, {"run", s.run}, {"positions", positions}, {"variants", vs}};
}

}  // namespace ragform::reproduce
