// SpotlightRAG's end-to-end step (paper section 4, Tables 1-3: EM, %): the generator's answer to
// an eq. (10) prompt and its grade. One step for every front end that generates (`spotlight eval
// --generate`, `reproduce spotlight`), so they count EM the same way:
//   generation  greedy, at most max_tokens, stopped at the first newline that follows
//               non-whitespace text (GenerateParams::stop_after_line): the prompt ends in
//               "Answer:", and a base reader (Gemma 3 270M) begins its answer with a newline and
//               then continues with the next question or more evidence. A "\n" stop string
//               ended every such answer before its first word (EM 0 of 300, issue 43);
//   answer      the generated text with leading whitespace removed, cut at its first newline:
//               its first non-empty line (lost-in-the-middle's
//               `prediction.strip().split("\n")[0]`), so a reader that does not honour the stop
//               rule is graded on the same line;
//   grade       exact match, token F1 and substring match of that line against the gold
//               answers, with SQuAD's normalize_answer exactly (text::kSquadReference,
//               text/normalize.h: lower-case, drop ASCII punctuation, drop the articles a/an/the,
//               collapse whitespace; no accent or compatibility folding, Unicode punctuation
//               kept), not ragform's default normaliser.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "reader/reader.h"

namespace ragform::spotlight {

struct GradedAnswer {
  std::string text;  // the answer line that was graded
  double em = 0, f1 = 0, substring = 0;
  // Of the generation (answer_and_grade): its prompt's tokens and why it ended.
  int prompt_tokens = 0;
  std::string finish_reason;
};

// Greedy, max_tokens, stop after the first non-empty line.
reader::GenerateParams answer_params(int max_tokens);

// The answer line of a generated text (see above).
std::string answer_line(std::string_view generated);

// The answer line of `generated` graded against `answers` (non-empty; text/metrics.h throws
// otherwise).
GradedAnswer grade_answer(std::string_view generated, const std::vector<std::string>& answers);

// Generates the answer to `prompt` and grades it, with the reader's attention steered by `steer`
// for this answer (select.h's emphasis_steering; the reader's own steering is restored after).
// Errors of the reader propagate.
GradedAnswer answer_and_grade(reader::Reader& r, const std::string& prompt,
                              const std::vector<std::string>& answers, int max_tokens,
                              const reader::SteeringParams& steer = {});

}  // namespace ragform::spotlight
