#include "pipelines/cnorm/outputs.h"

#include <cstdio>

namespace ragform::cnorm {

nlohmann::json needle_record(const Item& it) {
  nlohmann::json ctxs = nlohmann::json::array();
  ctxs.push_back({{"title", it.gold.title}, {"text", it.gold.text}, {"isgold", true}});
  for (const auto& d : it.distractors)
    ctxs.push_back({{"title", d.title}, {"text", d.text}, {"isgold", false}});
  return {{"id", it.id}, {"question", it.question}, {"answers", it.answers}, {"ctxs", ctxs}};
}

std::string needle_jsonl(size_t count, size_t docs, uint64_t seed) {
  std::string out;
  for (const auto& it : make_needle_items(count, docs, seed))
    out += needle_record(it).dump() + "\n";
  return out;
}

namespace {

// Pads a label to 10 columns counting code points, not bytes, so '·' lines up with ASCII names.
std::string pad10(std::string name) {
  size_t cols = 0;
  for (unsigned char ch : name) cols += (ch & 0xC0) != 0x80;
  if (cols < 10) name.append(10 - cols, ' ');
  return name;
}

}  // namespace

std::vector<std::string> calibration_lines(const Profile& prof) {
  const std::string& best = prof.best_name.empty() ? prof.best.name : prof.best_name;
  std::vector<std::string> lines;
  for (const auto& c : prof.candidates) {
    char buf[160];
    std::snprintf(buf, sizeof buf, " ABS %.6f +- %.6f (%zu prompts)", c.mean, c.std, c.abs.size());
    lines.push_back("  " + pad10(c.label()) + buf + (c.label() == best ? "  <- best" : ""));
  }
  return lines;
}

std::vector<std::string> eval_lines(const EvalSummary& sum) {
  std::vector<std::string> lines;
  for (const auto& s : sum.average) {
    char buf[320];
    std::snprintf(buf, sizeof buf, "  %-10s OAA %.4f  OPA %.4f (best position %zu of %zu)",
                  s.name.c_str(), s.oaa, s.opa, s.best_position + 1, s.accuracy.size());
    lines.push_back(buf);
  }
  return lines;
}

}  // namespace ragform::cnorm
