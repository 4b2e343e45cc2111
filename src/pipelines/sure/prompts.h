// SURE's prompt texts, kept as versioned files in <source>/prompts/sure/NAME.vN.txt and loaded at
// run time (`--prompts DIR`), so they can be read, diffed and changed without rebuilding:
//   style_simple, style_complex   style perturbations (Figure 8 is not in our copy of the paper:
//                                  these are faithful rewrites of 3.2's definitions)
//   paraphrase                    source perturbations (same prompt, different reader)
//   rank_sentences                logic/llm-ranked: order numbered sentences by relevance
//   nli                           Figure 10, bidirectional entailment (3.4)
//   qa_instruction, qa_prompt     Figure 11 instruction I and the layout of P = (I, G, Q)
//   chain_of_note                 Chain-of-Note instruction (Table 5 baseline)
//   closed_book                   closed-book answering for Known/Unknown (3.3)
//   judge                         LLM-as-judge (Appendix G), two demonstrations, CoT verdict
// The default directory is the source tree's prompts/sure (an absolute path recorded by CMake),
// i.e. the source tree the binary was built from; a prompt's identity in run stores is
// "<name>.v<N>" plus the SHA-256 of its text, so a changed prompt never resumes an old run.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ragform::sure {

struct PromptSet {
  std::string dir;
  std::map<std::string, std::string> text;     // name -> template text
  std::map<std::string, std::string> version;  // name -> "name.v1"
  const std::string& get(const std::string& name) const;
  // {"name": "name.v1:<sha256 prefix 16>"} for run configs.
  std::string identity(const std::string& name) const;
};

// <source tree>/prompts/sure, recorded at configure time.
std::string default_prompts_dir();

// Loads the highest version of every required prompt in `dir` (empty = default). Throws Error
// naming the directory and the missing file.
PromptSet load_prompts(const std::string& dir = "");

// Replaces each {name} in `tmpl` by vars[name] in one pass (substituted text is not rescanned, so
// a document containing "{question}" stays as it is). A {name} not in vars is an Error.
std::string fill(const std::string& tmpl, const std::map<std::string, std::string>& vars);

// fill, also giving the byte range [begin, end) in the result of every substitution of {name}
// (in order; none when the template has no {name}): where a pipeline's document sits in its
// prompt, for attention steering on it.
std::string fill(const std::string& tmpl, const std::map<std::string, std::string>& vars,
                 const std::string& name, std::vector<std::pair<size_t, size_t>>& spans);

}  // namespace ragform::sure
