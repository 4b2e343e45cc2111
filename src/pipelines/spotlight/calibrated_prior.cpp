#include "pipelines/spotlight/calibrated_prior.h"

namespace ragform::spotlight {

PriorPrompt prior_prompt(const std::string& question, const std::vector<Document>& docs) {
  PriorPrompt p;
  for (const Document& d : docs) {
    const size_t b = p.text.size();
    p.text += d.title + ": " + d.text;
    p.documents.push_back({b, p.text.size()});
    p.text += "\n\n";
  }
  p.text += "Question: " + question + "\nAnswer:";
  return p;
}

}  // namespace ragform::spotlight
