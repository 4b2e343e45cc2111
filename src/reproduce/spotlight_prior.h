// SpotlightRAG's calibrated document prior (`spotlight select --prior calibrated`), here because
// it joins two pipelines that do not depend on each other: Spotlight's prior prompt
// (pipelines/spotlight/calibrated_prior.h) read by C-NORM's calibrated attention
// (pipelines/cnorm/relevance.h). Front ends call this; none assembles it.
#pragma once
#include <string>
#include <vector>

#include "pipelines/cnorm/cnorm.h"
#include "pipelines/spotlight/spotlight.h"
#include "reader/reader.h"

namespace ragform::reproduce {

// How calibrated relevance becomes a prior: Found in the Middle's allocation (eq. 5,
// softmax(rel / t)) over its largest value, the default; or min-max normalised
// (document_prior_from_relevance), ragform's earlier form.
enum class PriorAllocation { Softmax, MinMax };
PriorAllocation parse_prior_allocation(const std::string& s);  // UsageError("--prior-allocation")

// The question's document prior: each document's attention from the prior prompt's final token
// (head mean of each of the reader's n_layer layers, averaged over the layers; under the curve's
// measure) minus the bias curve at its slot (eq. 4), then allocated as `allocation` says, with
// temperature t for the softmax. Error when the curve's slots are not one per document.
std::vector<double> calibrated_document_prior(reader::Reader& r, int n_layer,
                                              const cnorm::BiasCurve& bias,
                                              const std::string& question,
                                              const std::vector<spotlight::Document>& docs,
                                              PriorAllocation allocation, double temperature);

}  // namespace ragform::reproduce
