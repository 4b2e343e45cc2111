// The generation + EM step of SpotlightRAG (see answer.h).
#include "pipelines/spotlight/answer.h"

#include <optional>

#include "reader/scoped_steering.h"
#include "text/metrics.h"

namespace ragform::spotlight {

reader::GenerateParams answer_params(int max_tokens) {
  reader::GenerateParams gp;
  gp.max_tokens = max_tokens;
  gp.temperature = 0.0;  // greedy: the paper's answers are deterministic
  gp.stop_after_line = true;
  return gp;
}

std::string answer_line(std::string_view generated) {
  const size_t b = generated.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  generated.remove_prefix(b);
  return std::string(generated.substr(0, generated.find('\n')));
}

GradedAnswer grade_answer(std::string_view generated, const std::vector<std::string>& answers) {
  GradedAnswer g;
  g.text = answer_line(generated);
  // SQuAD's own normalize_answer (text::kSquadReference): the paper grades EM as the SQuAD-style
  // QA benchmarks of its Tables 1-3 do, so no accent or compatibility folding and only ASCII
  // punctuation dropped ("café" is not "cafe", "Paris—" is not "Paris").
  const text::AnswerScores s = text::score_answer(g.text, answers, text::kSquadReference);
  g.em = s.exact_match;
  g.f1 = s.token_f1;
  g.substring = s.substring_match;
  return g;
}

GradedAnswer answer_and_grade(reader::Reader& r, const std::string& prompt,
                              const std::vector<std::string>& answers, int max_tokens,
                              const reader::SteeringParams& steer) {
  std::optional<reader::ScopedSteering> scoped;
  if (steer.active()) scoped.emplace(r, steer);
  const reader::Generation gen = r.generate(prompt, answer_params(max_tokens));
  GradedAnswer g = grade_answer(gen.text, answers);
  g.prompt_tokens = gen.prompt_tokens;
  g.finish_reason = gen.finish_reason;
  return g;
}

}  // namespace ragform::spotlight
