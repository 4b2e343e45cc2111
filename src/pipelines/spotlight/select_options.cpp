#include "pipelines/spotlight/select_options.h"

#include "pipelines/spotlight/select.h"

namespace ragform::spotlight {

void check_score_options(ScoreOptions& o) { check_options(o); }

void check_prompt_options(PromptOptions& o) {
  check_options(o);
  option_choice("order", o.order, {"doc", "score"});
}

void check_encoder_options(EncoderOptions& o) {
  check_options(o);
  option_choice("oov", o.oov, {"match", "skip"});
}

void check_select_options(SelectOptions& o) {
  check_score_options(o.score);
  check_prompt_options(o.prompt);
  check_encoder_options(o.encoder);
}

ScoreParams score_params(const ScoreOptions& o, ScoreParams base) {
  if (o.k) base.top_k = int(*o.k);
  if (o.lambda) base.lambda = *o.lambda;
  return base;
}

SelectParams select_params(const ScoreOptions& s, const PromptOptions& p) {
  SelectParams out;
  out.top_K = int(s.K);
  out.order = p.order == "score" ? Order::Score : Order::Document;
  out.special_tokens = p.special_tokens;
  return out;
}

OovPolicy oov_policy(const EncoderOptions& o) {
  return o.oov == "skip" ? OovPolicy::Skip : OovPolicy::Match;
}

}  // namespace ragform::spotlight
