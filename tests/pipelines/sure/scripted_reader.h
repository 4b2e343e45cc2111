// A deterministic scripted Reader for SURE pipeline tests: rule-based answers and NLI verdicts so
// every stage (perturb, filter, instances, eval) runs with non-zero counts and no capable model.
// Rules (by prompt shape; prompts come from prompts/sure):
//   rewrite prompts (style / paraphrase): the document, lower-cased for "simple", prefixed with
//     "Notably, " for "complex" (or doubled when its length % 5 == 0: backward NLI fails),
//     unchanged for paraphrase; empty output when its length % 11 == 0 (a failed rewrite), the
//     document minus its
//     first sentence when its length % 7 == 0 (may lose the answer), and "NOT " prefixed when its
//     length % 13 == 0 (NLI says contradiction).
//   ranking: "2, 1, 3, ..." (swap the first two), or "none" when the list length % 5 == 0.
//   NLI: contradiction when the hypothesis starts with "NOT ", neutral when the premise is more
//     than 1.5x longer than the hypothesis, else entailment.
//   closed book: the first gold answer when known(question) (hash parity), else "I don't know".
//   QA: NO-RES for a JSON document when the question hash % 3 == 0 (a Lose), the gold answer when
//     the document contains it, the answer from memory for a Markdown document of a known
//     question (a Win on noise), else NO-RES.
//   judge: "Verdict: correct" when the response contains a gold answer, else "incorrect".
//   Throws for any prompt containing fail_marker (remote failure -> unmeasured).
#pragma once
#include <cctype>
#include <functional>
#include <map>
#include <string>

#include "base/stable_hash.h"
#include "support/fake_reader.h"
#include "text/metrics.h"

namespace ragform::sure::testing {

// The shared FakeReader (tests/support/fake_reader.h) answering by the rules above.
class ScriptedReader : public ::ragform::testing::FakeReader {
 public:
  // question -> gold answers, so closed-book answering can "know" some.
  std::map<std::string, std::vector<std::string>> answers;
  int& calls = generate_calls;

  ScriptedReader() {
    name = "scripted";
    FakeReader::answer = [this](const std::string& p) { return answer(p); };
    tokens = [](const std::string& p) { return static_cast<int>(p.size() / 4); };
  }
  ScriptedReader(const ScriptedReader&) = delete;
  ScriptedReader& operator=(const ScriptedReader&) = delete;

  static size_t h(const std::string& s) { return size_t(::ragform::fnv1a64(s)); }
  bool known(const std::string& q) const { return h(q) % 2 == 0; }

  static std::string between(const std::string& s, const std::string& a, const std::string& b) {
    size_t i = s.find(a);
    if (i == std::string::npos) return "";
    i += a.size();
    size_t j = b.empty() ? s.size() : s.find(b, i);
    if (j == std::string::npos) j = s.size();
    return s.substr(i, j - i);
  }

  std::string answer(const std::string& p) const {
    if (p.rfind("Rewrite the document", 0) == 0 || p.rfind("Paraphrase the document", 0) == 0) {
      std::string doc = between(p, "Document:\n", "\n\n");
      if (doc.size() % 11 == 0) return "";
      if (doc.size() % 13 == 0) return "NOT " + doc;
      if (doc.size() % 7 == 0) {
        size_t dot = doc.find(". ");
        if (dot != std::string::npos) doc = doc.substr(dot + 2);
      }
      if (p.find("simple style") != std::string::npos) {
        std::string low;
        for (char c : doc) low += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return low;
      }
      if (p.find("complex style") != std::string::npos)
        return doc.size() % 5 == 0 ? doc + " " + doc : "Notably, " + doc;
      return "Here is the paraphrased document:\n" + doc;
    }
    if (p.rfind("You are evaluating whether a response", 0) == 0) {
      std::string last = p.substr(p.rfind("\nQuestion: "));  // after the demonstrations
      std::string q = between(last, "Gold answers: ", "\nResponse: ");
      std::string resp = between(last, "\nResponse: ", "\nReasoning:");
      std::vector<std::string> gold;
      size_t pos = 0;
      while (pos <= q.size()) {
        size_t e = q.find("; ", pos);
        if (e == std::string::npos) e = q.size();
        gold.push_back(q.substr(pos, e - pos));
        pos = e + 2;
      }
      return text::substring_match(resp, gold) > 0 ? "It matches.\nVerdict: correct"
                                                   : "It does not.\nVerdict: incorrect";
    }
    if (p.find("numbered sentences") != std::string::npos) {
      std::string list = between(p, "Sentences:\n", "\n\nOrder:");
      size_t n = 1;
      for (char c : list) n += c == '\n';
      if (list.size() % 5 == 0) return "none";
      std::string out = "2, 1";
      for (size_t i = 3; i <= n; ++i) out += ", " + std::to_string(i);
      return out;
    }
    if (p.rfind("Consider the two passages", 0) == 0) {
      std::string prem = between(p, "Premise: ", "\nHypothesis: ");
      std::string hyp = between(p, "Hypothesis: ", "\nDoes the premise");
      if (hyp.rfind("NOT ", 0) == 0) return " contradiction";
      if (prem.size() > hyp.size() * 3 / 2) return "neutral";
      return "Entailment.";
    }
    if (p.rfind("Answer the question with a short answer", 0) == 0) {
      std::string q = between(p, "Question: ", "\nAnswer:");
      auto it = answers.find(q);
      if (it != answers.end() && known(q)) return it->second[0];
      return "I don't know";
    }
    if (p.find("\nDocument: ") != std::string::npos) {
      std::string doc = between(p, "\nDocument: ", "\n\nQuestion: ");
      std::string q = between(p, "\n\nQuestion: ", "\nAnswer:");
      auto it = answers.find(q);
      if (it == answers.end()) return "NO-RES";
      bool json = doc.rfind("{", 0) == 0;
      if (json && h(q) % 3 == 0) return "NO-RES";
      if (text::substring_match(doc, it->second) > 0) return it->second[0];
      if (doc.rfind("# ", 0) == 0 && known(q)) return it->second[0];
      return "NO-RES";
    }
    return "?";
  }
};

}  // namespace ragform::sure::testing
