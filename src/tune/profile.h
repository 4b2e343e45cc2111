// A tuned profile: the answer of `ragform tune` as one JSON file, the input of `ragform present
// --profile`, the server's /v1/rag/present and Python's ragform.present. Layout (schema 1):
//   {"format": "ragform-tune-profile", "schema_version": 1,
//    "presentation": {presentation.h to_json: every dimension, searched or not},
//    "searched": ["delimiter", "p", "format", "order", "k", "spotlight"]  (the dimensions the
//                 search varied, in that order; the others hold their original value),
//    "model": "stories260K.gguf" (the model file's name or the remote model),
//    "model_sha256": "..." ("" for a remote model), "reader": "native:...",
//    "task": "qa" | "kv" | "needle", "objective": "accuracy" | "robust" | "balanced" | "abs",
//    "run": {"store": "PATH", "id": N}  (the run store and tune run the profile came from),
//    "deployed": "tuned" | "original", "why": "...", "winner": "<label>"  (deploy.h: whether
//                 "presentation" is the search's winner or the original presentation, the reason
//                 with the held-out CI, and the winner's label either way; absent from profiles
//                 written before the deploy rule)}
// Applying a profile needs only "presentation" and "task" (present may use any task's template:
// the task only picks the template).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tune/presentation.h"

namespace ragform::tune {

inline constexpr int kProfileSchema = 1;

struct Profile {
  Presentation presentation;
  std::vector<std::string> searched;
  std::string model, model_sha256, reader;
  Task task = Task::Qa;
  std::string objective = "accuracy";
  std::string store;
  int64_t run = 0;
  std::string deployed, why, winner;  // "" when the profile does not say
  bool operator==(const Profile&) const = default;
};

nlohmann::ordered_json profile_to_json(const Profile& p);
// Validates every field; errors read "<where>: <field>: <why>" and name the bad field ("<where>:
// not a ragform tune profile" for JSON of another kind, "<where>: schema_version: ..." for a
// newer schema).
Profile profile_from_json(const nlohmann::json& j, const std::string& where);
// The profile file at `path` (FileError when unreadable, Error "<path>: ..." when invalid).
Profile load_profile(const std::string& path);
// Writes the profile (2-space indented JSON and a newline) to `path`.
void save_profile(const std::string& path, const Profile& p);
// "deployed the original presentation: <why>" (or "tuned"), for `present`'s one line on stderr;
// "" for a profile that records no decision.
std::string deployment_note(const Profile& p);

}  // namespace ragform::tune
