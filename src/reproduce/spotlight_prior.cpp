#include "reproduce/spotlight_prior.h"

#include <algorithm>
#include <numeric>

#include "base/error.h"

namespace ragform::reproduce {

PriorAllocation parse_prior_allocation(const std::string& s) {
  if (s == "softmax") return PriorAllocation::Softmax;
  if (s == "minmax") return PriorAllocation::MinMax;
  throw UsageError("--prior-allocation", "expected softmax or minmax, got '" + s + "'");
}

std::vector<double> calibrated_document_prior(reader::Reader& r, int n_layer,
                                              const cnorm::BiasCurve& bias,
                                              const std::string& question,
                                              const std::vector<spotlight::Document>& docs,
                                              PriorAllocation allocation, double temperature) {
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
  const std::vector<double> rel = cnorm::calibrated_relevance(
      cnorm::layer_mean_attention(r, p.text, spans, layers, bias.measure), bias.curve);
  if (allocation == PriorAllocation::MinMax) return spotlight::document_prior_from_relevance(rel);
  // Found in the Middle's eq. 5 allocation, scaled so the most relevant document's prior is 1 (as
  // the min-max form's is): only the priors' ratios weigh the documents' tokens.
  std::vector<double> alpha = cnorm::softmax_allocation(rel, temperature);
  const double top = *std::max_element(alpha.begin(), alpha.end());
  for (double& a : alpha) a /= top;
  return alpha;
}

}  // namespace ragform::reproduce
