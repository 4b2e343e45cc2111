// The instance pair of SURE: one (question, document, perturbation) with the original and the
// perturbed document — the JSONL line `ragform sure perturb` writes and `filter` / `eval` read:
//   {"id": "<record id>#<doc index>", "instance": record id, "doc": index, "perturbation": name,
//    "category", "question", "answers": [...], "title", "original", "perturbed",
//    "embeds_title": bool, "note": "", "failed": bool[, "known": bool]}
// "known" is `sure prepare`'s Known/Unknown verdict of the question, present when perturb's input
// records carried it (prepare.h): `sure eval` then uses it rather than decide again.
// `original` is the document text; `perturbed` is what replaces it in the prompt (for format and
// metadata kinds it already carries the title, embeds_title = true).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ragform::sure {

struct Pair {
  std::string id;
  std::string instance;
  int doc = 0;
  std::string perturbation;
  std::string category;
  std::string question;
  std::vector<std::string> answers;
  std::string title;
  std::string original;
  std::string perturbed;
  bool embeds_title = false;
  std::string note;
  bool failed = false;
  std::optional<bool> known;  // sure prepare's verdict, when the input records carry it
};

nlohmann::ordered_json pair_to_json(const Pair& p);
// The identity of a set of pairs: hex SHA-256 of their pair_to_json lines (compact, in order, one
// per line). It names a run's input (sure eval's run identity) whether the pairs came from a file,
// stdin or Python; a shard hashes the whole input, so the shards of one study share a run.
std::string pairs_sha256(const std::vector<Pair>& pairs);
// Throws Error("<where>", reason) naming the bad field.
Pair pair_from_json(const nlohmann::json& j, const std::string& where);
// Refuses pairs of one question that carry different `known` verdicts (true and false, or one
// with a verdict and one without): a question is Known or Unknown once (sure prepare writes one
// verdict per question), and the first pair read would silently decide for all. Error names the
// question and two pairs that disagree.
void check_known_agrees(const std::vector<Pair>& pairs);
// Reads a pairs JSONL file ("-" = stdin); errors are "<file>:<line>: <reason>".
std::vector<Pair> read_pairs(const std::string& path);

// The grounding text G the reader sees for the original document and for the perturbed one:
// "(Title: T) text" (lost-in-the-middle's document layout) unless the perturbation embeds the
// title.
std::string grounding_original(const Pair& p);
std::string grounding_perturbed(const Pair& p);

}  // namespace ragform::sure
