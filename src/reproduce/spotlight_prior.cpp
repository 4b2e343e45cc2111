#include "reproduce/spotlight_prior.h"

#include <numeric>

#include "base/error.h"

namespace ragform::reproduce {

std::vector<double> calibrated_document_prior(reader::Reader& r, int n_layer,
                                              const cnorm::BiasCurve& bias,
                                              const std::string& question,
                                              const std::vector<spotlight::Document>& docs) {
  if (bias.curve.size() != docs.size())
    throw Error("spotlight", "the bias curve has " + std::to_string(bias.curve.size()) +
                                 " slots for a question of " + std::to_string(docs.size()) +
                                 " documents: measure it with position-bias -k " +
                                 std::to_string(docs.size()));
  const spotlight::PriorPrompt p = spotlight::prior_prompt(question, docs);
  std::vector<cnorm::CharSpan> spans;
  for (const runtime::CharSpan& c : p.documents) spans.push_back({c.begin, c.end});
  std::vector<int> layers(static_cast<size_t>(n_layer));
  std::iota(layers.begin(), layers.end(), 0);
  const std::vector<double> mass = cnorm::layer_mean_masses(r, p.text, spans, layers);
  return spotlight::document_prior_from_relevance(cnorm::calibrated_relevance(mass, bias.curve));
}

}  // namespace ragform::reproduce
