#include "pipelines/cnorm/outputs.h"

#include <cctype>
#include <cstdio>
#include <string>

#include "base/error.h"
#include "base/excerpt.h"
#include "base/stable_hash.h"

namespace ragform::cnorm {

nlohmann::json needle_record(const Item& it) {
  nlohmann::json ctxs = nlohmann::json::array();
  ctxs.push_back({{"title", it.gold.title}, {"text", it.gold.text}, {"isgold", true}});
  for (const auto& d : it.distractors)
    ctxs.push_back({{"title", d.title}, {"text", d.text}, {"isgold", false}});
  return {{"id", it.id}, {"question", it.question}, {"answers", it.answers}, {"ctxs", ctxs}};
}

nlohmann::json item_record(const Item& it, size_t k, size_t gold_pos) {
  nlohmann::json ctxs = nlohmann::json::array();
  const std::vector<Document> docs = arrange(it, k, gold_pos);
  for (size_t i = 0; i < docs.size(); ++i) {
    nlohmann::json c = {
        {"title", docs[i].title}, {"text", docs[i].text}, {"isgold", i == gold_pos}};
    if (i == gold_pos) c["hasanswer"] = true;
    ctxs.push_back(std::move(c));
  }
  return {{"id", it.id}, {"question", it.question}, {"answers", it.answers}, {"ctxs", ctxs}};
}

size_t GoldPlacement::position(const Item& it, size_t k, uint64_t seed) const {
  switch (kind) {
    case First:
      return 0;
    case Last:
      return k - 1;
    case Slot:
      return slot;
    case Random:
      break;
  }
  return size_t(derive_seed(seed, "gold position " + it.id) % k);
}

GoldPlacement parse_gold_placement(const std::string& s, size_t k) {
  GoldPlacement g;
  if (s == "first") return g.kind = GoldPlacement::First, g;
  if (s == "last") return g.kind = GoldPlacement::Last, g;
  if (s == "random") return g.kind = GoldPlacement::Random, g;
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty() || !std::isdigit(static_cast<unsigned char>(s[0])) || v < 1 ||
      size_t(v) > k)
    throw UsageError("--gold", "first, last, random or a position 1.." + std::to_string(k) +
                                   ", got '" + excerpt(s) + "'");
  g.kind = GoldPlacement::Slot;
  g.slot = size_t(v - 1);
  return g;
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
