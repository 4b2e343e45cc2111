// SURE's bidirectional entailment check (section 3.4) with an NLI cross-encoder instead of the
// reader's Figure 10 prompt: each (premise, hypothesis) pair is classified as the pair
// [CLS] premise [SEP] hypothesis [SEP] (reader/encoder.h), and the label with the highest score is
// the answer (its name read as parse_nli reads a reader's answer: "entailment", "ENTAILMENT",
// "contradiction", ...). Both directions are asked, as with the prompt; the pair is kept iff both
// are entailment.
#pragma once
#include <string>
#include <vector>

#include "pipelines/sure/preserve.h"
#include "reader/encoder.h"

namespace ragform::sure {

// The judge for FilterOptions::judge. The encoder must outlive it.
NliJudge encoder_nli_judge(reader::Encoder& enc);

// Throws UsageError naming `what` unless one of `labels` reads as entailment (an NLI head).
void check_nli_labels(const std::vector<std::string>& labels, const std::string& what);

}  // namespace ragform::sure
