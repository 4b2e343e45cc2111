// Selection, category tagging and prefix annotation (see select.h).
#include "pipelines/spotlight/select.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <numeric>

#include "base/error.h"

namespace ragform::spotlight {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Words of a sentence: maximal runs of ASCII letters/digits (others are separators).
std::vector<std::string> alnum_words(const std::string& s) {
  std::vector<std::string> w;
  std::string cur;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      cur += c;
    } else if (!cur.empty()) {
      w.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) w.push_back(cur);
  return w;
}

bool is_year(const std::string& w) {
  std::string d = w;
  if (d.size() == 5 && d.back() == 's') d.pop_back();
  if (d.size() != 4 || !std::all_of(d.begin(), d.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      }))
    return false;
  int y = std::stoi(d);
  return y >= 1000 && y <= 2099;
}

bool in(const std::string& w, std::initializer_list<const char*> set) {
  for (const char* s : set)
    if (w == s) return true;
  return false;
}

}  // namespace

std::string categorize(const std::string& sentence) {
  const std::vector<std::string> words = alnum_words(sentence);
  std::vector<std::string> lw;
  for (const auto& w : words) lw.push_back(lower(w));
  const std::string padded = " " + lower(sentence) + " ";
  // causal
  for (size_t i = 0; i < lw.size(); ++i) {
    const std::string& w = lw[i];
    const std::string next = i + 1 < lw.size() ? lw[i + 1] : "";
    if (in(w, {"because", "caused", "causes", "causing", "resulted", "therefore", "thus", "hence",
               "consequently"}))
      return "causal";
    if ((w == "due" && next == "to") || (w == "owing" && next == "to") ||
        (w == "led" && next == "to") || (w == "leads" && next == "to") ||
        (w == "so" && next == "that") || (w == "result" && next == "of") ||
        (w == "results" && next == "in"))
      return "causal";
    if (w == "since" && !(i + 1 < words.size() && is_year(words[i + 1]))) return "causal";
  }
  // definition
  for (const char* pat :
       {" is a ", " is an ", " is the ", " was a ", " was an ", " was the ", " are a ", " were a ",
        " refers to ", " known as ", " defined as ", " also called "})
    if (padded.find(pat) != std::string::npos) return "definition";
  // temporal
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = lw[i];
    if (is_year(words[i])) return "temporal";
    if (in(w, {"january", "february",  "march",    "april",    "june",     "july",
               "august",  "september", "october",  "november", "december", "monday",
               "tuesday", "wednesday", "thursday", "friday",   "saturday", "sunday",
               "century", "centuries", "decade",   "decades"}))
      return "temporal";
    if (in(words[i], {"BC", "AD", "BCE", "CE"})) return "temporal";
    // The month May only when capitalised: lower-case "may" is the modal verb.
    if (words[i] == "May") return "temporal";
  }
  // numeric
  for (size_t i = 0; i < words.size(); ++i) {
    if (std::any_of(words[i].begin(), words[i].end(),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      return "numeric";
    if (in(lw[i], {"hundred", "hundreds", "thousand", "thousands", "million", "millions", "billion",
                   "billions", "percent"}))
      return "numeric";
  }
  // entity: a capitalised word after the first word.
  for (size_t i = 1; i < words.size(); ++i)
    if (std::isupper(static_cast<unsigned char>(words[i][0]))) return "entity";
  return "other";
}

std::string rel_token(double r) {
  r = std::clamp(r, 0.0, 1.0);
  char buf[32];
  std::snprintf(buf, sizeof buf, "<Rel%.2f>", r);
  return buf;
}

std::vector<size_t> top_sentences(const ScoredQuestion& scored, int K) {
  if (K < 1)
    throw UsageError("spotlight", "sentence count K must be >= 1, got " + std::to_string(K));
  std::vector<size_t> idx(scored.sentences.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    return scored.sentences[a].R > scored.sentences[b].R;
  });
  if (idx.size() > static_cast<size_t>(K)) idx.resize(K);
  return idx;
}

std::string build_prompt(const std::string& question, const std::vector<std::string>& lines) {
  std::string p = "Question: " + question + "\nEvidence:\n";
  for (const auto& l : lines) p += l + "\n";
  p += "Answer:";
  return p;
}

Selection select_and_annotate(const std::string& question, const std::vector<Document>& docs,
                              const ScoredQuestion& scored, const SelectParams& p) {
  // The K best sentences that hold any text: an empty or blank sentence (HotpotQA has some) is
  // no evidence, and was selected with an empty line scored from its title alone (pass 23).
  const auto blank = [&](size_t i) {
    const SentenceScore& s = scored.sentences[i];
    const Document& d = docs.at(s.doc);
    const text::TextSpan sp = d.sentences.at(s.sent);
    return d.text.substr(sp.begin, sp.size()).find_first_not_of(" \t\n\r") == std::string::npos;
  };
  if (p.top_K < 1)
    throw UsageError("spotlight", "sentence count K must be >= 1, got " + std::to_string(p.top_K));
  std::vector<size_t> idx;
  for (size_t i : top_sentences(scored, std::max<int>(p.top_K, int(scored.sentences.size())))) {
    if (idx.size() == size_t(p.top_K)) break;
    if (!blank(i)) idx.push_back(i);
  }
  if (p.order == Order::Document) std::sort(idx.begin(), idx.end());
  Selection out;
  std::vector<std::string> lines;
  for (size_t i : idx) {
    const SentenceScore& s = scored.sentences[i];
    const Document& d = docs.at(s.doc);
    const text::TextSpan sp = d.sentences.at(s.sent);
    Selected sel;
    sel.score = s;
    sel.title = d.title;
    sel.doc_id = d.id;
    sel.text = d.text.substr(sp.begin, sp.size());
    // HotpotQA sentences carry their own leading space: trim for display and prompt.
    size_t b = sel.text.find_first_not_of(" \t\n");
    size_t e = sel.text.find_last_not_of(" \t\n");
    sel.text = b == std::string::npos ? "" : sel.text.substr(b, e - b + 1);
    sel.prefix = rel_token(s.R_norm);
    sel.category = categorize(sel.text);
    lines.push_back(p.special_tokens ? sel.prefix + " <" + sel.category + "> " + sel.text
                                     : sel.text);
    out.selected.push_back(std::move(sel));
  }
  out.prompt = build_prompt(question, lines);
  // Each sentence ends its line; the lines follow the question's header one per line.
  size_t at = build_prompt(question, {}).size() - std::string("Answer:").size();
  for (size_t i = 0; i < lines.size(); ++i) {
    out.selected[i].end = at + lines[i].size();
    out.selected[i].begin = out.selected[i].end - out.selected[i].text.size();
    at += lines[i].size() + 1;
  }
  return out;
}

reader::SteeringParams emphasis_steering(const Selection& sel, double factor) {
  reader::SteeringParams s;
  if (factor == 1.0) return s;
  for (const Selected& x : sel.selected)
    if (x.end > x.begin) s.spans.push_back({x.begin, x.end});
  if (s.spans.empty()) return s;
  s.rule = runtime::Steering::Rescale;
  s.value = float(factor);
  return s;
}

std::string emphasis_spans_text(const Selection& sel) {
  std::string t;
  for (const Selected& x : sel.selected)
    if (x.end > x.begin)
      t += (t.empty() ? "" : ",") + std::to_string(x.begin) + ":" + std::to_string(x.end);
  return t;
}

}  // namespace ragform::spotlight
