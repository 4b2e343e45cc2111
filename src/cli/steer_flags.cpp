#include "cli/steer_flags.h"

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "reader/steering_object.h"

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
  if (!steer.seen) {
    for (const Opt<std::string>* o : {&spans, &layers, &heads})
      if (o->seen) throw UsageError(o->names.back(), "needs --steer");
    return {};
  }
  // The flags are the steering object's keys (reader/steering_object.h), in the CLI's syntax:
  // the lists are read here, the object is checked by the one parser every front end uses.
  nlohmann::json o = {{"rule", steer.value}};
  if (spans.seen) {
    nlohmann::json list = nlohmann::json::array();
    for (const runtime::CharSpan& c : runtime::parse_char_spans(spans.value, "spans"))
      list.push_back({c.begin, c.end});
    o["spans"] = list;
  }
  if (layers.seen) o["layers"] = layers.value;  // the object takes the CLI's text as it is
  if (heads.seen) o["heads"] = runtime::parse_head_list(heads.value, "heads");
  return reader::parse_steering(o);
}

reader::SteeringParams steer_rule_params(const std::string& rule,
                                         const std::vector<runtime::CharSpan>& spans) {
  nlohmann::json list = nlohmann::json::array();
  for (const runtime::CharSpan& c : spans) list.push_back({c.begin, c.end});
  return reader::parse_steering({{"rule", rule}, {"spans", list}});
}

std::string steer_flag(const std::string& key) {
  if (key.empty() || key == "rule") return "--steer";
  if (key == "spans" || key == "layers" || key == "heads") return "--steer-" + key;
  return key;  // a name a caller gave (bench's own flags)
}

}  // namespace ragform::cli
