#include "cli/steer_flags.h"

#include "base/error.h"

namespace ragform::cli {

SteerFlags::SteerFlags(Args& a)
    : steer(a.opt<std::string>("--steer", "RULE",
                               "attention steering: rescale:FACTOR (PASTA with alpha = "
                               "1/FACTOR: the spans' attention times FACTOR against the prompt's "
                               "other tokens, every row renormalised), reallocate:SHARE (the "
                               "spans get SHARE of each row after them), reallocate:S1,S2,... "
                               "(each --steer-spans span its own share, in their order) or "
                               "redistribute:W1,W2,... (Found in the Middle: each row keeps its "
                               "attention on the spans and splits it in proportion to the "
                               "weights); needs --steer-spans",
                               "")),
      spans(a.opt<std::string>("--steer-spans", "START:END,...",
                               "byte ranges of the prompt to steer toward (before any chat "
                               "template); a token is in when any of its bytes is",
                               "")),
      layers(a.opt<std::string>("--steer-layers", "LAYERS",
                                "steered layers: I, A..B, negative from the end (default: the "
                                "last half)",
                                "")),
      heads(a.opt<std::string>("--steer-heads", "H,...", "steered heads (default: every head)",
                               "")) {}

reader::SteeringParams SteerFlags::params() const {
  reader::SteeringParams p;
  if (!steer.seen) {
    for (const Opt<std::string>* o : {&spans, &layers, &heads})
      if (o->seen) throw UsageError(o->names.back(), "needs --steer");
    return p;
  }
  runtime::parse_steer_rule(steer.value, p, "--steer");
  if (p.rule != runtime::Steering::Off && !spans.seen)
    throw UsageError("--steer", "needs --steer-spans (the prompt's byte ranges to steer)");
  if (spans.seen) p.spans = runtime::parse_char_spans(spans.value, "--steer-spans");
  if (layers.seen) p.layers = runtime::parse_layer_list(layers.value, "--steer-layers");
  if (heads.seen) p.heads = runtime::parse_head_list(heads.value, "--steer-heads");
  return p;
}

}  // namespace ragform::cli
