// A Reader without a model, for pipeline tests: every answer comes from a hook the test sets.
//   generate      answer(prompt); throws Error for a prompt containing fail_marker (a simulated
//                 remote failure); counts generate_calls
//   attention     heads(prompt, T): per-head weights over T = count_tokens(prompt) positions, one
//                 row at the final token; counts attention_calls
//   count_tokens  tokens(prompt); one token per prompt byte plus BOS when unset
// A capability is reported only when its hook is set; score and hidden are never supported.
#pragma once
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "reader/reader.h"

namespace ragform::testing {

class FakeReader : public reader::Reader {
 public:
  std::function<std::string(const std::string&)> answer;
  std::function<std::vector<std::vector<float>>(const std::string&, size_t)> heads;
  std::function<int(const std::string&)> tokens;
  std::string fail_marker;  // empty = never fail
  std::string mode = "raw";
  std::string name = "fake";
  int attention_calls = 0, generate_calls = 0;

  reader::Capabilities capabilities() const override {
    return {bool(answer), false, bool(heads), false};
  }
  std::string describe() const override { return name; }
  std::string chat_mode() const override { return mode; }
  reader::Generation generate(const std::string& prompt, const reader::GenerateParams&) override {
    ++generate_calls;
    if (!answer) throw NotSupported(name, "generate");
    if (!fail_marker.empty() && prompt.find(fail_marker) != std::string::npos)
      throw Error(name, "simulated remote failure");
    reader::Generation g;
    g.text = answer(prompt);
    g.prompt_tokens = count_tokens(prompt);
    g.finish_reason = "stop";
    return g;
  }
  reader::ScoreResult score(const std::string&, const std::string&) override {
    throw NotSupported(name, "score");
  }
  reader::AttentionResult attention(const std::string& prompt,
                                    const reader::AttentionQuery& q) override {
    ++attention_calls;
    if (!heads) throw NotSupported(name, "attention");
    const size_t T = size_t(count_tokens(prompt));
    reader::AttentionRows row;
    row.layer = q.layers.empty() ? -1 : q.layers[0];
    row.query_position = int(T) - 1;
    const auto all = heads(prompt, T);
    for (size_t h = 0; h < all.size(); ++h) {
      if (!q.heads.empty() && std::find(q.heads.begin(), q.heads.end(), int(h)) == q.heads.end())
        continue;
      row.head_ids.push_back(int(h));
      row.heads.push_back(all[h]);
    }
    row.mean.assign(T, 0.0f);
    for (const auto& h : row.heads)
      for (size_t t = 0; t < T; ++t) row.mean[t] += h[t] / float(row.heads.size());
    reader::AttentionResult r;
    r.rows.push_back(row);
    return r;
  }
  reader::HiddenResult hidden(const std::string&, int) override {
    throw NotSupported(name, "hidden");
  }
  int count_tokens(const std::string& prompt) override {
    return tokens ? tokens(prompt) : int(prompt.size()) + 1;
  }
};

}  // namespace ragform::testing
