#include "reproduce/calibrated_scores.h"

#include <cstdio>
#include <cstdlib>

#include "base/error.h"

namespace ragform::reproduce {

namespace {
double round9(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return std::strtod(buf, nullptr);
}
}  // namespace

std::vector<double> calibrated_paragraph_scores(reader::Reader& r, const eval::QaRecord& rec,
                                                const cnorm::BiasCurve& bias,
                                                const std::vector<int>& layers) {
  if (rec.ctxs.size() != bias.curve.size())
    throw Error("position-bias score", "record " + rec.id + " has " +
                                           std::to_string(rec.ctxs.size()) +
                                           " paragraphs but the bias curve " +
                                           std::to_string(bias.curve.size()) + " slots");
  cnorm::Item item;
  item.id = rec.id;
  item.question = rec.question;
  std::vector<cnorm::Document> docs;
  for (const eval::Context& c : rec.ctxs) docs.push_back({c.title, c.text});
  const cnorm::Prompt p = cnorm::render(cnorm::Task::Qa, cnorm::load_template(cnorm::Task::Qa, ""),
                                        item, docs, cnorm::Format{cnorm::original_delimiter()});
  const std::vector<double> attn =
      cnorm::layer_mean_attention(r, p.text, cnorm::document_spans(p, docs), layers, bias.measure);
  return cnorm::calibrated_relevance(attn, bias.curve);
}

nlohmann::ordered_json scored_record_json(const eval::QaRecord& rec,
                                          const std::vector<double>& scores) {
  nlohmann::ordered_json ctxs = nlohmann::ordered_json::array();
  for (size_t i = 0; i < rec.ctxs.size(); ++i) {
    const eval::Context& c = rec.ctxs[i];
    nlohmann::ordered_json j = {
        {"id", c.id}, {"title", c.title}, {"text", c.text}, {"isgold", c.isgold}};
    if (c.hasanswer) j["hasanswer"] = *c.hasanswer;
    j["score"] = round9(scores.at(i));
    ctxs.push_back(std::move(j));
  }
  return {{"id", rec.id}, {"question", rec.question}, {"answers", rec.answers}, {"ctxs", ctxs}};
}

}  // namespace ragform::reproduce
