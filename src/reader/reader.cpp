#include "reader/reader.h"

#include "base/error.h"

namespace ragform::reader {

std::vector<Generation> Reader::generate_batch(const std::vector<std::string>& prompts,
                                               const GenerateParams& p) {
  std::vector<Generation> out;
  out.reserve(prompts.size());
  if (!p.seeds.empty() && p.seeds.size() != prompts.size())
    throw Error("generate", "one seed per prompt expected");
  GenerateParams one = p;
  one.seeds.clear();
  for (size_t i = 0; i < prompts.size(); ++i) {
    one.seed = p.seeds.empty() ? p.seed + i : p.seeds[i];
    out.push_back(generate(prompts[i], one));
  }
  return out;
}

}  // namespace ragform::reader
