// A Reader without a model for the C-NORM unit tests: one token per prompt byte plus BOS, attention
// rows and generations given by the test.
#pragma once
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "reader/reader.h"

namespace ragform::cnorm::testing {

class FakeReader : public reader::Reader {
 public:
  // heads(prompt, T) -> per-head weights over T = count_tokens(prompt) positions.
  std::function<std::vector<std::vector<float>>(const std::string&, size_t)> heads;
  std::function<std::string(const std::string&)> answer;
  std::string mode = "raw";
  int attention_calls = 0, generate_calls = 0;

  reader::Capabilities capabilities() const override { return {true, false, true, false}; }
  std::string describe() const override { return "fake"; }
  std::string chat_mode() const override { return mode; }
  reader::Generation generate(const std::string& prompt, const reader::GenerateParams&) override {
    ++generate_calls;
    reader::Generation g;
    g.text = answer(prompt);
    g.prompt_tokens = count_tokens(prompt);
    g.finish_reason = "stop";
    return g;
  }
  reader::ScoreResult score(const std::string&, const std::string&) override {
    throw NotSupported("fake", "score");
  }
  reader::AttentionResult attention(const std::string& prompt,
                                    const reader::AttentionQuery& q) override {
    ++attention_calls;
    size_t T = size_t(count_tokens(prompt));
    reader::AttentionResult r;
    reader::AttentionRows row;
    row.layer = q.layers.empty() ? -1 : q.layers[0];
    row.query_position = int(T) - 1;
    auto all = heads(prompt, T);
    for (size_t h = 0; h < all.size(); ++h) {
      if (!q.heads.empty() && std::find(q.heads.begin(), q.heads.end(), int(h)) == q.heads.end())
        continue;
      row.head_ids.push_back(int(h));
      row.heads.push_back(all[h]);
    }
    row.mean.assign(T, 0.0f);
    for (const auto& h : row.heads)
      for (size_t t = 0; t < T; ++t) row.mean[t] += h[t] / float(row.heads.size());
    r.rows.push_back(row);
    return r;
  }
  reader::HiddenResult hidden(const std::string&, int) override {
    throw NotSupported("fake", "hidden");
  }
  int count_tokens(const std::string& prompt) override { return int(prompt.size()) + 1; }
};

}  // namespace ragform::cnorm::testing
