#include "reader/reader.h"

namespace ragform::reader {

std::vector<Generation> Reader::generate_batch(const std::vector<std::string>& prompts,
                                               const GenerateParams& p) {
  std::vector<Generation> out;
  out.reserve(prompts.size());
  for (auto& pr : prompts) out.push_back(generate(pr, p));
  return out;
}

}  // namespace ragform::reader
