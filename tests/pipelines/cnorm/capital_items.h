// The C-NORM unit tests' small QA set and the helpers their fake readers answer with: two
// "capital of ...?" questions, each with its gold document and two distractors, and the template
// that renders them as "Document [i](Title: t) text" lines (sweep_test, cnorm_run_test).
#pragma once
#include <sstream>
#include <string>
#include <vector>

#include "pipelines/cnorm/tasks.h"

namespace ragform::cnorm::testing {

inline const std::string kQaTemplate = "{search_results}\nQ: {question}\nA:";

inline std::vector<Item> capital_items() {
  Item a;
  a.id = "i1";
  a.question = "capital of France?";
  a.answers = {"Paris"};
  a.gold = {"G1", "The answer is Paris."};
  a.distractors = {{"D1", "Rome is old."}, {"D2", "Oslo is cold."}};
  Item b = a;
  b.id = "i2";
  b.question = "capital of Germany?";
  b.answers = {"Berlin"};
  b.gold = {"G2", "It is Berlin."};
  return {a, b};
}

// The texts of a prompt's "Document [i](Title: t) text" lines, in prompt order (what a fake
// reader echoes to be right exactly when the gold sits where it looks).
inline std::vector<std::string> document_texts(const std::string& prompt) {
  std::vector<std::string> docs;
  std::istringstream in(prompt);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Document [", 0) == 0) docs.push_back(line.substr(line.find(") ") + 2));
  return docs;
}

}  // namespace ragform::cnorm::testing
