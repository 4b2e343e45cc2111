// The attention-steering flags every reader command shares (generate, score, attention, logits),
// declared once (runtime/steering.h has the rules):
//   --steer rescale:FACTOR|reallocate:SHARE|redistribute:W1,..., --steer-spans START:END,... (byte
//   offsets into the prompt text, before any chat template), --steer-layers (default: the last
//   half; negative indices count from the end; A..B ranges), --steer-heads (default: every head).
#pragma once
#include <string>
#include <vector>

#include "cli/args.h"
#include "reader/steering_params.h"

namespace ragform::cli {

struct SteerFlags {
  explicit SteerFlags(Args& a);
  Opt<std::string>& steer;
  Opt<std::string>& spans;
  Opt<std::string>& layers;
  Opt<std::string>& heads;
  // The steering the flags ask for (off without --steer): the steering object they spell, read by
  // reader::parse_steering (reader/steering_object.h). A runtime::SteerError for a bad value or
  // --steer without --steer-spans (steer_flag() spells its key); UsageError for span/layer/head
  // flags without --steer.
  reader::SteeringParams params() const;
};

// The steering a --steer RULE alone asks for, with `spans` as its spans: the object {rule, spans}
// read by reader::parse_steering, so the rule's grammar and errors (spelled --steer) are every
// verb's. For a command that chooses its own spans (bench: the prompt's first half) and takes no
// --steer-spans.
reader::SteeringParams steer_rule_params(const std::string& rule,
                                         const std::vector<runtime::CharSpan>& spans);

// The flag of a steering object's key ("spans" -> "--steer-spans", "rule" or the object ->
// "--steer"): how the CLI says a runtime::SteerError (cli/main.cpp), wherever it was raised.
std::string steer_flag(const std::string& key);

}  // namespace ragform::cli
