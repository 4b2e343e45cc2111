// The sweep tests' recomputation of a stored `position-bias --sweep` row through the CLI: its
// document spans and per-document numbers as flag lists, and each document's calibrated
// relevance as `ragform attention --doc-spans` and the curve give it.
#pragma once
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace ragform::testing {

// "B:E,B:E,..." of a row's [[begin, end], ...].
inline std::string span_list(const nlohmann::json& spans) {
  std::string s;
  for (size_t d = 0; d < spans.size(); ++d)
    s += (d ? "," : "") + std::to_string(spans[d][0].get<size_t>()) + ":" +
         std::to_string(spans[d][1].get<size_t>());
  return s;
}

// "V,V,..." of numbers, each in %.9g (what the row's shares or weights read back as).
inline std::string number_list(const nlohmann::json& values) {
  std::string s;
  for (size_t d = 0; d < values.size(); ++d) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", values[d].get<double>());
    s += (d ? "," : "") + std::string(buf);
  }
  return s;
}

// Each document's calibrated relevance (Found in the Middle's eq. 4): its attention per token
// (the curve's measure) from `ragform attention --layer l` for every layer l < n_layer, mean over
// the layers, minus the curve at its slot. Empty when a command fails.
inline std::vector<double> cli_calibrated(const std::filesystem::path& model,
                                          const std::filesystem::path& prompt,
                                          const std::string& spans, const nlohmann::json& curve,
                                          int n_layer) {
  const size_t k = curve["curve"].size();
  std::vector<double> cal(k, 0.0);
  for (int l = 0; l < n_layer; ++l) {
    auto a = run_ragform("attention -m " + quoted(model) + " --file " + quoted(prompt) +
                         " --json --layer " + std::to_string(l) + " --doc-spans " + spans);
    EXPECT_EQ(a.exit_code, 0) << a.err;
    if (a.exit_code != 0) return {};
    for (size_t d = 0; d < k; ++d)
      cal[d] += nlohmann::json::parse(a.out)["documents"][d]["mean"].get<double>() / n_layer;
  }
  for (size_t d = 0; d < k; ++d) cal[d] -= curve["curve"][d].get<double>();
  return cal;
}

}  // namespace ragform::testing
