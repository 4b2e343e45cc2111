// The numbers the three papers report for their main experiments, transcribed from the paper
// texts in ../shared/papers/ (cnorm-surface-formatting.txt, sure-spurious-features.txt,
// spotlightrag-span-selection.txt). Each entry names its source (table or section). Values are in
// the paper's own unit: 25.7 for 25.7 %, 0.810 for an OAA, a count for SURE's Table 2.
// `ragform reproduce --list` prints them; the report's "Paper vs this run" section
// (paper_section.cpp) puts them beside a run's values. tests/report/paper_numbers_fixture_test
// checks a sample of entries against the paper text.
#pragma once
#include <string>
#include <vector>

namespace ragform::report {

struct PaperNumber {
  const char* paper;       // "cnorm", "sure", "spotlight"
  const char* experiment;  // "longbench", "kv-retrieval", "sure-wiki", "multihopqa", ...
  const char* model;       // as the paper names it ("LLaMA-2-7B-Chat")
  const char* method;      // row of the table ("C-NORM", "Reverse", "SpotlightRAG")
  const char* metric;      // column ("accuracy hard", "Known-Golden RR", "EM (w/o training)")
  double value;            // the paper's unit
  const char* source;      // "Table 1", "Section 3, text (Figure 2)"
};

const std::vector<PaperNumber>& paper_numbers();

// The models the papers name (distinct, in table order), for matching a user's model.
std::vector<std::string> paper_models();

// The paper model a user's model is, from its general.name and file name: the longest paper model
// name contained in either after lower-casing and dropping everything but letters and digits
// ("Llama-2-7b-chat.Q4_K_M.gguf" -> "LLaMA-2-7B-Chat"); "" when none is.
std::string match_paper_model(const std::string& general_name, const std::string& file_name);

}  // namespace ragform::report
