#include "pipelines/sure/pairs.h"

#include <climits>
#include <fstream>
#include <iostream>
#include <map>

#include "base/error.h"
#include "base/excerpt.h"
#include "base/json_error.h"
#include "base/json_file.h"
#include "base/json_keys.h"
#include "pipelines/sure/taxonomy.h"
#include "store/sha256.h"

namespace ragform::sure {

nlohmann::ordered_json pair_to_json(const Pair& p) {
  nlohmann::ordered_json j;
  j["id"] = p.id;
  j["instance"] = p.instance;
  j["doc"] = p.doc;
  j["perturbation"] = p.perturbation;
  j["category"] = p.category;
  j["question"] = p.question;
  j["answers"] = p.answers;
  j["title"] = p.title;
  j["original"] = p.original;
  j["perturbed"] = p.perturbed;
  j["embeds_title"] = p.embeds_title;
  j["note"] = p.note;
  j["failed"] = p.failed;
  if (p.known) j["known"] = *p.known;  // absent otherwise: older pair files hash as before
  return j;
}

std::string pairs_sha256(const std::vector<Pair>& pairs) {
  std::string text;
  for (const auto& p : pairs) text += pair_to_json(p).dump() + "\n";
  return store::sha256_hex(text);
}

Pair pair_from_json(const nlohmann::json& j_in, const std::string& where) {
  if (!j_in.is_object()) throw Error(where, "expected a JSON object");
  // What pair_to_json writes, a null key read as absent (base/json_keys.h; pass 20: a misspelt
  // "knwon" counted the pair as Unknown, "title": null was "expected string"). Another key is an
  // error of the file, as its other faults are.
  const nlohmann::json j = without_nulls(j_in);
  only_json_keys(j,
                 {"id", "instance", "doc", "perturbation", "category", "question", "answers",
                  "title", "original", "perturbed", "embeds_title", "note", "failed", "known"},
                 where, "a pair", KeyFault::runtime);
  auto str = [&](const char* k, bool required) -> std::string {
    if (!j.contains(k)) {
      if (required) throw Error(where, std::string("missing field '") + k + "'");
      return "";
    }
    if (!j[k].is_string()) throw Error(where, std::string("field '") + k + "': expected string");
    return j[k].get<std::string>();
  };
  Pair p;
  p.id = str("id", true);
  p.instance = str("instance", false);
  if (p.instance.empty()) p.instance = p.id.substr(0, p.id.rfind('#'));
  if (j.contains("doc")) {
    const nlohmann::json& d = j["doc"];
    if (!d.is_number_integer()) throw Error(where, "field 'doc': expected integer");
    // An index that does not fit an int is an error, never truncated.
    if (d.is_number_unsigned() ? d.get<unsigned long long>() > (unsigned long long)INT_MAX
                               : d.get<long long>() < INT_MIN || d.get<long long>() > INT_MAX)
      throw Error(where, "field 'doc': " + json_excerpt(d) + " is out of range for an int");
    p.doc = d.get<int>();
  }
  p.perturbation = str("perturbation", true);
  auto k = parse_kind(p.perturbation);
  if (!k) throw Error(where, "unknown perturbation '" + p.perturbation + "'");
  p.category = info(*k).category;
  p.embeds_title = info(*k).embeds_title;
  p.question = str("question", true);
  if (!j.contains("answers") || !j["answers"].is_array())
    throw Error(where, "field 'answers': expected an array of strings");
  for (const auto& a : j["answers"]) {
    if (!a.is_string()) throw Error(where, "field 'answers': expected an array of strings");
    p.answers.push_back(a.get<std::string>());
  }
  p.title = str("title", false);
  p.original = str("original", true);
  p.perturbed = str("perturbed", true);
  p.note = str("note", false);
  if (j.contains("failed")) {
    if (!j["failed"].is_boolean()) throw Error(where, "field 'failed': expected boolean");
    p.failed = j["failed"].get<bool>();
  }
  if (j.contains("known")) {
    if (!j["known"].is_boolean()) throw Error(where, "field 'known': expected boolean");
    p.known = j["known"].get<bool>();
  }
  return p;
}

void check_known_agrees(const std::vector<Pair>& pairs) {
  std::map<std::string, const Pair*> first;  // instance -> its first pair
  auto said = [](const Pair& p) {
    return p.known ? std::string(*p.known ? "known: true" : "known: false") : "no known";
  };
  for (const Pair& p : pairs) {
    const auto [it, fresh] = first.emplace(p.instance, &p);
    if (!fresh && it->second->known != p.known)
      throw Error("sure pairs", "question '" + excerpt(p.instance) + "': pair '" +
                                    excerpt(it->second->id) + "' has " + said(*it->second) +
                                    ", pair '" + excerpt(p.id) + "' has " + said(p) +
                                    ": a question's pairs carry one verdict (sure prepare's)");
  }
}

std::vector<Pair> read_pairs(const std::string& path) {
  std::ifstream f;
  std::istream* in = &std::cin;
  if (path != "-") {
    f.open(path, std::ios::binary);
    if (!f) throw Error(path, "cannot open");
    in = &f;
  }
  std::vector<Pair> out;
  // A question's first pair: its index in `out` and its line (check_known_agrees, with lines).
  std::map<std::string, std::pair<size_t, size_t>> first;
  std::string line;
  size_t n = 0;
  while (std::getline(*in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = path + ":" + std::to_string(n);
    nlohmann::json j;
    try {
      j = parse_json_text(line);
    } catch (const JsonTextError& e) {
      throw Error(where, "bad JSON: " + std::string(e.what()));
    }
    out.push_back(pair_from_json(j, where));
    // A question's verdict checked here too, so that the refusal names both lines.
    const auto [it, fresh] = first.emplace(out.back().instance, std::pair{out.size() - 1, n});
    if (!fresh && out[it->second.first].known != out.back().known) {
      try {
        check_known_agrees({out[it->second.first], out.back()});
      } catch (const Error& e) {
        throw Error(where, std::string(e.what()) + " (the first of them on line " +
                               std::to_string(it->second.second) + ")");
      }
    }
  }
  return out;
}

std::string grounding_original(const Pair& p) {
  return p.title.empty() ? p.original : "(Title: " + p.title + ") " + p.original;
}

std::string grounding_perturbed(const Pair& p) {
  if (p.embeds_title || p.title.empty()) return p.perturbed;
  return "(Title: " + p.title + ") " + p.perturbed;
}

}  // namespace ragform::sure
