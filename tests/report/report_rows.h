// Result rows for the report tests, written with the RunStore API in the layouts the pipelines
// write (one row per instance and variant; scores and extra as the pipeline stores them).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "store/run_store.h"

namespace ragform::testing {

// Writes rows into one store: `put(run, instance, variant, correct, scores, extra)`. Every row
// carries `prompt` and `output` (the only text the report shows of a row) unless the call gives
// its own prompt.
struct RowWriter {
  store::RunStore& st;
  std::string prompt = "p";
  std::string output = "out";

  void operator()(int64_t run, const std::string& instance, const std::string& variant,
                  std::optional<bool> correct, std::map<std::string, double> scores = {},
                  nlohmann::json extra = nlohmann::json::object(),
                  const std::optional<std::string>& row_prompt = std::nullopt) const {
    store::Result r;
    r.run = run;
    r.instance = instance;
    r.variant = variant;
    r.prompt = row_prompt ? *row_prompt : prompt;
    r.output = output;
    r.correct = correct;
    r.scores = std::move(scores);
    r.extra = std::move(extra);
    st.put(r);
  }
};

}  // namespace ragform::testing
