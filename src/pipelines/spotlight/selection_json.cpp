#include "pipelines/spotlight/selection_json.h"

#include <cstdio>
#include <cstdlib>

namespace ragform::spotlight {

namespace {

using ojson = nlohmann::ordered_json;

// What "%.9g" prints: stable output, float32-exact.
double round9(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return std::strtod(buf, nullptr);
}

// A store row's matches carry their bytes in the sentence; a match outside it (a title token of
// the title context) has none to show and is left out there.
ojson matches_json(const Selected& s, const SelectionJsonOptions& opt, const text::TextSpan& sp) {
  auto num = [&](double v) { return opt.round9 ? round9(v) : v; };
  ojson out = ojson::array();
  for (const Match& x : s.score.matches) {
    if (!opt.docs) {
      out.push_back({{"q", x.q}, {"c", x.c}, {"s", num(x.s)}});
      continue;
    }
    if (x.c_span.begin < sp.begin || x.c_span.end > sp.end || x.c_span.size() == 0) continue;
    out.push_back({{"q", x.q},
                   {"c", x.c},
                   {"s", num(x.s)},
                   {"begin", x.c_span.begin - sp.begin},
                   {"end", x.c_span.end - sp.begin}});
  }
  return out;
}

ojson sentence_json(const Selected& s, const SelectionJsonOptions& opt) {
  auto num = [&](double v) { return opt.round9 ? round9(v) : v; };
  if (!opt.docs)
    return {
        {"title", s.title},   {"doc_id", s.doc_id},       {"sent_id", s.score.sent},
        {"text", s.text},     {"R", num(s.score.R_norm)}, {"R_raw", num(s.score.R)},
        {"prefix", s.prefix}, {"category", s.category},   {"matches", matches_json(s, opt, {})}};
  const Document& d = opt.docs->at(size_t(s.score.doc));
  const text::TextSpan sp = d.sentences.at(size_t(s.score.sent));
  const bool gold = opt.gold && opt.gold->count({s.score.doc, s.score.sent}) > 0;
  return {{"title", s.title},
          {"text", d.text.substr(sp.begin, sp.size())},
          {"R", num(s.score.R_norm)},
          {"R_raw", num(s.score.R)},
          {"category", s.category},
          {"gold", gold},
          {"matches", matches_json(s, opt, sp)}};
}

}  // namespace

nlohmann::ordered_json selection_json(const std::string& id, const Selection& sel,
                                      const SelectionJsonOptions& opt) {
  ojson sj = ojson::array();
  for (const Selected& s : sel.selected) sj.push_back(sentence_json(s, opt));
  return ojson{{"id", id}, {"selected", sj}, {"prompt", sel.prompt}};
}

}  // namespace ragform::spotlight
