#include "store/export.h"

#include <charconv>
#include <set>
#include <vector>

#include "base/error.h"

namespace ragform::store {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

std::string number(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

std::string dump(const ordered_json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A JSON value as one CSV cell: strings bare, null empty, numbers shortest, others compact JSON.
std::string cell(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return number(v.get<double>());
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

void write_record(std::ostream& out, const std::vector<std::string>& fields) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) out << ',';
    out << csv_field(fields[i]);
  }
  out << "\r\n";
}

ordered_json object_of(const std::map<std::string, double>& m) {
  ordered_json j = ordered_json::object();
  for (auto& [k, v] : m) j[k] = v;
  return j;
}

std::int64_t export_results(const RunStore& store, std::optional<std::int64_t> run,
                            ExportFormat format, std::ostream& out) {
  std::int64_t n = 0;
  if (format == ExportFormat::jsonl) {
    store.for_each_result(run, [&](const Result& r) {
      out << dump(to_json(r)) << '\n';
      ++n;
    });
    return n;
  }
  // CSV: the columns are the union of the keys over all exported rows, so read twice.
  std::set<std::string> score_keys, timing_keys, extra_keys;
  store.for_each_result(run, [&](const Result& r) {
    for (auto& [k, v] : r.scores) score_keys.insert(k);
    for (auto& [k, v] : r.timings_ms) timing_keys.insert(k);
    for (auto& [k, v] : r.extra.items()) extra_keys.insert(k);
  });
  std::vector<std::string> header = {"run", "instance", "variant", "status", "error", "correct"};
  for (auto& k : score_keys) header.push_back("score." + k);
  for (const char* h : {"output", "prompt", "prompt_tokens"}) header.push_back(h);
  for (auto& k : timing_keys) header.push_back("timing_ms." + k);
  for (auto& k : extra_keys) header.push_back("extra." + k);
  write_record(out, header);
  std::vector<std::string> f;
  store.for_each_result(run, [&](const Result& r) {
    f = {std::to_string(r.run), r.instance, r.variant,
         to_string(r.status),   r.error,    r.correct ? (*r.correct ? "1" : "0") : ""};
    for (auto& k : score_keys) {
      auto it = r.scores.find(k);
      f.push_back(it == r.scores.end() ? "" : number(it->second));
    }
    f.push_back(r.output);
    f.push_back(r.prompt);
    f.push_back(r.prompt_tokens ? std::to_string(*r.prompt_tokens) : "");
    for (auto& k : timing_keys) {
      auto it = r.timings_ms.find(k);
      f.push_back(it == r.timings_ms.end() ? "" : number(it->second));
    }
    for (auto& k : extra_keys) f.push_back(r.extra.contains(k) ? cell(r.extra[k]) : "");
    write_record(out, f);
    ++n;
  });
  return n;
}

std::int64_t export_runs(const RunStore& store, std::optional<std::int64_t> run,
                         ExportFormat format, std::ostream& out) {
  std::vector<RunInfo> runs;
  if (run) {
    runs.push_back(*store.run(*run));
  } else {
    runs = store.runs();
  }
  if (format == ExportFormat::csv)
    write_record(out, {"id", "created_at", "pipeline", "tool_version", "model_path", "model_sha256",
                       "reader", "chat_mode", "seed", "config_key", "rows", "ok", "unmeasured",
                       "correct", "wrong", "ungraded", "config"});
  for (const RunInfo& r : runs) {
    Counts c = store.counts(r.id);
    if (format == ExportFormat::jsonl) {
      out << dump(to_json(r, c)) << '\n';
      continue;
    }
    write_record(out, {std::to_string(r.id), r.created_at, r.pipeline, r.tool_version, r.model_path,
                       r.model_sha256, r.reader, r.chat_mode, std::to_string(r.seed), r.config_key,
                       std::to_string(c.rows), std::to_string(c.ok), std::to_string(c.unmeasured),
                       std::to_string(c.correct), std::to_string(c.wrong),
                       std::to_string(c.ungraded), canonical_json(r.config)});
  }
  return std::int64_t(runs.size());
}

}  // namespace

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  q += '"';
  return q;
}

ordered_json to_json(const Result& r) {
  ordered_json j;
  j["run"] = r.run;
  j["instance"] = r.instance;
  j["variant"] = r.variant;
  j["status"] = to_string(r.status);
  j["error"] = r.status == Status::ok ? ordered_json() : ordered_json(r.error);
  j["correct"] = r.correct ? ordered_json(*r.correct) : ordered_json();
  j["scores"] = object_of(r.scores);
  j["output"] = r.output;
  j["prompt"] = r.prompt;
  j["prompt_tokens"] = r.prompt_tokens ? ordered_json(*r.prompt_tokens) : ordered_json();
  j["timings_ms"] = object_of(r.timings_ms);
  j["extra"] = ordered_json::parse(r.extra.dump(-1, ' ', false, json::error_handler_t::replace));
  return j;
}

ordered_json to_json(const RunInfo& r, const Counts& c) {
  ordered_json j;
  j["id"] = r.id;
  j["created_at"] = r.created_at;
  j["pipeline"] = r.pipeline;
  j["config"] = ordered_json::parse(canonical_json(r.config));
  j["tool_version"] = r.tool_version;
  j["model_path"] = r.model_path;
  j["model_sha256"] = r.model_sha256;
  j["reader"] = r.reader;
  j["chat_mode"] = r.chat_mode;
  j["seed"] = r.seed;
  j["config_key"] = r.config_key;
  const ordered_json counts = counts_json(c);
  for (auto it = counts.begin(); it != counts.end(); ++it) j[it.key()] = it.value();
  return j;
}

ordered_json counts_json(const Counts& c) {
  return {{"rows", c.rows},       {"ok", c.ok},       {"unmeasured", c.unmeasured},
          {"correct", c.correct}, {"wrong", c.wrong}, {"ungraded", c.ungraded}};
}

std::int64_t export_store(const RunStore& store, std::optional<std::int64_t> run, ExportTable table,
                          ExportFormat format, std::ostream& out) {
  if (run && !store.run(*run)) {
    std::string ids;
    for (const RunInfo& r : store.runs()) ids += (ids.empty() ? "" : ", ") + std::to_string(r.id);
    throw Error("export: " + store.path().string(),
                "no run " + std::to_string(*run) + " (runs: " + (ids.empty() ? "none" : ids) + ")");
  }
  std::int64_t n = table == ExportTable::results ? export_results(store, run, format, out)
                                                 : export_runs(store, run, format, out);
  if (!out) throw Error("export", "write error");
  return n;
}

}  // namespace ragform::store
