#include "reader/prompt_logits.h"

#include <algorithm>

#include "engine/model/model.h"
#include "engine/runtime/context.h"

namespace ragform::reader {

bool all_positions(const LogitsRequest& req) {
  return option_choice("positions", req.positions, {"last", "all"}) == 1;
}

PromptLogits prompt_logits(const NativeReader& r, const std::string& prompt,
                           const LogitsRequest& req, bool kv_f16, const SteeringParams& steer) {
  const bool all = all_positions(req);
  TokenizedPrompt tokens = r.tokenize_prompt(prompt);
  runtime::ContextParams cp;
  cp.n_ctx = std::max<int>(int(tokens.ids.size()), 1);
  cp.kv_type = kv_f16 ? runtime::KvType::F16 : runtime::KvType::F32;
  cp.pool = r.pool();
  runtime::Context ctx(r.model(), cp);
  runtime::SeqInput in;
  in.seq = ctx.new_sequence();
  ctx.set_steering(in.seq, r.resolve_steering(tokens, steer, prompt.size()));
  in.tokens = std::move(tokens.ids);
  in.logits = all ? runtime::LogitsMode::All : runtime::LogitsMode::Last;
  auto res = ctx.eval({in});
  PromptLogits out;
  out.rows = res[0].logit_positions.size();
  out.n_vocab = r.model().hp().n_vocab;
  out.logits = std::move(res[0].logits);
  return out;
}

}  // namespace ragform::reader
