// Dataset statistics for `ragform data check`. See datasets_check.h.
#include "eval/datasets_check.h"

#include <algorithm>
#include <cstdio>
#include <unordered_set>

namespace ragform::eval {

using nlohmann::json;

void CountSummary::add(size_t v) {
  if (n == 0 || v < min) min = v;
  if (n == 0 || v > max) max = v;
  ++n;
  sum += static_cast<double>(v);
}

json CountSummary::to_json() const {
  if (n == 0) return json{{"min", nullptr}, {"mean", nullptr}, {"max", nullptr}};
  return json{{"min", min}, {"mean", mean()}, {"max", max}};
}

DatasetCheck check_dataset(const std::string& path, Format format, bool skip_bad,
                           size_t max_listed) {
  DatasetCheck c;
  c.path = path;
  LoadOptions opts;
  opts.format = format;
  opts.read.skip_bad = skip_bad;
  opts.read.keep_reasons = max_listed;
  std::unordered_set<std::string> ids;
  c.info = for_each_qa_record(path, opts, [&](QaRecord& r, const JsonRow& row) {
    for (auto it = row.value.begin(); it != row.value.end(); ++it) ++c.field_rows[it.key()];
    if (!ids.insert(r.id).second) ++c.duplicate_ids;
    c.answers.add(r.answers.size());
    c.contexts.add(r.ctxs.size());
    size_t gold = 0, adv = 0;
    for (auto& ctx : r.ctxs) {
      gold += ctx.isgold;
      adv += ctx.adversarial;
      if (r.hotpot) c.sentences_per_context.add(ctx.sentences.size());
    }
    c.gold_contexts.add(gold);
    c.adversarial_contexts.add(adv);
    if (r.hotpot) {
      c.supporting_facts.add(r.hotpot->supporting_facts.size());
      for (auto& f : r.hotpot->supporting_facts) c.unresolved_supporting_facts += !f.sentence_ok;
      if (!r.hotpot->type.empty()) ++c.labels["type=" + r.hotpot->type];
      if (!r.hotpot->level.empty()) ++c.labels["level=" + r.hotpot->level];
    }
    if (r.kv) c.kv_records.add(r.kv->records.size());
    if (r.choice) {
      ++c.labels["difficulty=" + r.choice->difficulty];
      ++c.labels["length=" + r.choice->length];
      ++c.labels[std::string("answer=") + r.choice->answer];
    }
  });
  return c;
}

json DatasetCheck::to_json() const {
  const ReadStats& s = info.stats;
  json bad = json::array();
  for (auto& b : s.first_bad) bad.push_back({{"line", b.line}, {"reason", b.reason}});
  json j{{"file", path},
         {"format", format_name(info.format)},
         {"layout", layout_name(info.layout)},
         {"gzip", info.gzip},
         {"ok", ok()},
         {"rows", s.rows_ok},
         {"bad_rows", s.rows_bad},
         {"blank_lines", s.blank_lines},
         {"stream_error", s.stream_error ? json{{"line", s.stream_error_at.line},
                                                {"reason", s.stream_error_at.reason}}
                                         : json(nullptr)},
         {"duplicate_ids", duplicate_ids},
         {"fields", field_rows},
         {"answers_per_row", answers.to_json()},
         {"contexts_per_row", contexts.to_json()},
         {"gold_contexts_per_row", gold_contexts.to_json()},
         {"adversarial_contexts_per_row", adversarial_contexts.to_json()},
         {"bad_lines", bad},
         {"bad_lines_listed", s.first_bad.size()}};
  if (supporting_facts.n) {
    j["sentences_per_context"] = sentences_per_context.to_json();
    j["supporting_facts_per_row"] = supporting_facts.to_json();
    j["unresolved_supporting_facts"] = unresolved_supporting_facts;
  }
  if (kv_records.n) j["kv_records_per_row"] = kv_records.to_json();
  if (!labels.empty()) j["labels"] = labels;
  return j;
}

namespace {
std::string fmt_summary(const CountSummary& c) {
  if (!c.n) return "-";
  char buf[96];
  std::snprintf(buf, sizeof buf, "min %zu  mean %.2f  max %zu", c.min, c.mean(), c.max);
  return buf;
}
void line(std::string& out, const std::string& label, const std::string& value) {
  out += label;
  out += std::string(label.size() < 30 ? 30 - label.size() : 1, ' ');
  out += value + "\n";
}
}  // namespace

std::string DatasetCheck::to_text() const {
  const ReadStats& s = info.stats;
  std::string out;
  line(out, "file", path);
  line(out, "layout", std::string(layout_name(info.layout)) + (info.gzip ? ", gzip" : ""));
  line(out, "format", format_name(info.format));
  line(out, "rows",
       std::to_string(s.rows_ok) + " good, " + std::to_string(s.rows_bad) + " bad, " +
           std::to_string(s.blank_lines) + " blank lines");
  std::string f;
  for (auto& [k, v] : field_rows) f += (f.empty() ? "" : ", ") + k + " " + std::to_string(v);
  line(out, "fields (rows having them)", f.empty() ? "-" : f);
  if (duplicate_ids) line(out, "duplicate ids", std::to_string(duplicate_ids));
  line(out, "answers per row", fmt_summary(answers));
  line(out, "contexts per row", fmt_summary(contexts));
  if (gold_contexts.max) line(out, "gold contexts per row", fmt_summary(gold_contexts));
  if (adversarial_contexts.max)
    line(out, "adversarial contexts per row", fmt_summary(adversarial_contexts));
  if (supporting_facts.n) {
    line(out, "sentences per context", fmt_summary(sentences_per_context));
    line(out, "supporting facts per row", fmt_summary(supporting_facts));
    line(out, "unresolved supporting facts", std::to_string(unresolved_supporting_facts));
  }
  if (kv_records.n) line(out, "kv records per row", fmt_summary(kv_records));
  if (!labels.empty()) {
    std::string l;
    for (auto& [k, v] : labels) l += (l.empty() ? "" : ", ") + k + " " + std::to_string(v);
    line(out, "labels", l);
  }
  if (s.rows_bad) {
    out += "bad lines:\n";
    for (auto& b : s.first_bad)
      out += "  " + (b.line ? "line " + std::to_string(b.line) : std::string("file")) + ": " +
             b.reason + "\n";
    if (s.first_bad.size() < s.rows_bad)
      out += "  ... and " + std::to_string(s.rows_bad - s.first_bad.size()) + " more\n";
    if (s.stream_error) {
      const BadRow& b = s.stream_error_at;
      out += "reading stopped (broken file) at " +
             (b.line ? "line " + std::to_string(b.line) : std::string("start")) + ": " + b.reason +
             "\n";
    }
  }
  out += ok() ? "OK\n" : (s.rows_ok == 0 && s.rows_bad == 0 ? "FAILED: no records\n" : "FAILED\n");
  return out;
}

}  // namespace ragform::eval
