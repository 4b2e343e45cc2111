// The numbers the three papers report for their main experiments, transcribed from the paper
// texts (cnorm-surface-formatting.txt, sure-spurious-features.txt,
// spotlightrag-span-selection.txt in the shared papers directory). Each entry names its source
// (table or section). Values are in the paper's own unit: 25.7 for 25.7 %, 0.810 for an OAA, a
// count for SURE's Table 2, 1.01e-5 for a p printed as 1.01 x 10^-5. A number printed with
// significance stars keeps them in `stars`; a cell that is no number (SURE Table 11's "cosine") is
// a text entry: `text` holds it and `value` is NaN (has_value() is false), so a listing prints
// printed_value(), never the raw value. `ragform reproduce --list` prints them; the report's "Paper
// vs this run" section (paper_section.cpp) puts them beside a run's values.
// tests/report/paper_numbers_fixture_test checks every entry against the paper text near its
// source, and every table cell against the entries.
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
  double value;            // the paper's unit; NaN for a text entry
  const char* source;      // "Table 1", "Section 2, text (Figure 2)", "Appendix A.3, text"
  const char* stars = "";  // significance stars printed with the value ("***"), "" when none
  const char* text = "";   // the cell when it is not a number ("cosine"), "" for a number
};

// False for a text entry (value NaN, `text` set).
bool has_value(const PaperNumber& e);

// The entry as the paper prints it, for listings: the number (%g) followed by its stars
// ("1.01e-05***"), or the text of a text entry ("cosine").
std::string printed_value(const PaperNumber& e);

const std::vector<PaperNumber>& paper_numbers();

// The models the papers name (distinct, in table order), for matching a user's model. A setting
// that is no model's (model "-") is left out.
std::vector<std::string> paper_models();

// The paper model a user's model is, from its general.name and file name: the longest paper model
// name contained in either after lower-casing and dropping everything but letters and digits
// ("Llama-2-7b-chat.Q4_K_M.gguf" -> "LLaMA-2-7B-Chat"); "" when none is.
std::string match_paper_model(const std::string& general_name, const std::string& file_name);

}  // namespace ragform::report
