// The papers' numbers (paper_numbers.h). Transcribed from the tab-separated tables and the
// sentences of the three papers' texts; SURE Table 1's Org column is one merged cell per category
// (method "<Category> (category)"), Table 3 of SpotlightRAG repeats the full model's row (method
// "SpotlightRAG (full, ablation)").
#include "report/paper_numbers.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>

#include "report/paper_numbers_parts.h"

namespace ragform::report {

const std::vector<PaperNumber>& paper_numbers() {
  // The listing's order is the transcription's: C-NORM, SURE Tables 1-3, SpotlightRAG Tables
  // 1-3, the rest of SURE, SpotlightRAG Table 4 (`reproduce --list` and the report print it).
  static const std::vector<PaperNumber> v = [] {
    std::vector<PaperNumber> all;
    for (auto part : {cnorm_numbers, sure_main_numbers, spotlight_main_numbers, sure_more_numbers,
                      spotlight_sensitivity_numbers}) {
      std::vector<PaperNumber> p = part();
      all.insert(all.end(), p.begin(), p.end());
    }
    return all;
  }();
  return v;
}

bool has_value(const PaperNumber& e) { return !std::isnan(e.value); }

std::string printed_value(const PaperNumber& e) {
  if (!has_value(e)) return e.text;
  char b[32];
  std::snprintf(b, sizeof b, "%g", e.value);
  return std::string(b) + e.stars;
}

std::vector<std::string> paper_models() {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& e : paper_numbers())
    if (std::string(e.model) != "-" && seen.insert(e.model).second) out.push_back(e.model);
  return out;
}

namespace {
std::string squash(const std::string& s) {
  std::string o;
  for (unsigned char c : s)
    if (std::isalnum(c)) o += char(std::tolower(c));
  return o;
}
}  // namespace

std::string match_paper_model(const std::string& general_name, const std::string& file_name) {
  const std::string a = squash(general_name), b = squash(file_name);
  std::string best;
  size_t best_len = 0;
  for (const auto& m : paper_models()) {
    std::string k = squash(m);
    if (k.empty() || k.size() <= best_len) continue;
    if (a.find(k) != std::string::npos || b.find(k) != std::string::npos) {
      best = m;
      best_len = k.size();
    }
  }
  return best;
}

}  // namespace ragform::report
