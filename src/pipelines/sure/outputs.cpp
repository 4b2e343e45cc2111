#include "pipelines/sure/outputs.h"

#include <cstdio>

namespace ragform::sure {

std::string json_line(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::string pairs_jsonl(const std::vector<Pair>& pairs) {
  std::string out;
  for (const auto& p : pairs) out += json_line(pair_to_json(p));
  return out;
}

std::vector<std::string> perturb_notes(const PerturbResult& res, size_t records) {
  std::vector<std::string> notes;
  if (res.no_ctx)
    notes.push_back("sure perturb: " + std::to_string(res.no_ctx) +
                    " records without documents skipped");
  notes.push_back("sure perturb: " + std::to_string(res.pairs.size()) + " pairs (" +
                  std::to_string(res.failed) + " failed) from " + std::to_string(records) +
                  " records");
  return notes;
}

FilterLines filter_lines(const std::vector<Pair>& pairs,
                         const std::vector<FilterVerdict>& verdicts) {
  FilterLines out;
  for (size_t i = 0; i < pairs.size(); ++i) {
    auto j = pair_to_json(pairs[i]);
    if (!verdicts[i].nli_forward.empty()) {
      j["nli_forward"] = verdicts[i].nli_forward;
      j["nli_backward"] = verdicts[i].nli_backward;
    }
    if (verdicts[i].keep) {
      out.kept += json_line(j);
      ++out.n_kept;
    } else {
      j["reason"] = verdicts[i].reason;
      out.rejected += json_line(j);
    }
  }
  return out;
}

std::string report_jsonl(const std::vector<ReportRow>& rows) {
  std::string out;
  for (const auto& row : rows) out += json_line(row.to_json());
  return out;
}

std::string eval_note(const EvalSummary& sum) {
  const EvalStats& stats = sum.stats;
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "sure eval: run %lld: %lld generated, %lld already done, %lld unmeasured, %lld "
                "deferred; %lld pairs measured, %lld not; %.1f s generating, %.0f prompt tok/s",
                static_cast<long long>(sum.run), static_cast<long long>(stats.generated),
                static_cast<long long>(stats.skipped_done),
                static_cast<long long>(stats.unmeasured), static_cast<long long>(stats.deferred),
                static_cast<long long>(stats.pairs_measured),
                static_cast<long long>(stats.pairs_unmeasured), stats.generate_seconds,
                stats.generate_seconds > 0 ? stats.prompt_tokens / stats.generate_seconds : 0.0);
  return buf;
}

}  // namespace ragform::sure
