#include "tune/profile.h"

#include <algorithm>
#include <cstdint>
#include <fstream>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/excerpt.h"
#include "base/json_file.h"
#include "base/json_keys.h"

namespace ragform::tune {

namespace {

const char* kFormat = "ragform-tune-profile";

const std::vector<std::string>& dimension_names() {
  static const std::vector<std::string> d = {"delimiter", "p", "format", "order", "k", "spotlight"};
  return d;
}

std::string string_field(const nlohmann::json& j, const char* f, const std::string& where,
                         bool required) {
  if (!j.contains(f)) {
    if (required) throw UsageError(where, std::string(f) + ": missing");
    return "";
  }
  if (!j[f].is_string()) throw UsageError(where, std::string(f) + ": must be a string");
  return j[f].get<std::string>();
}

}  // namespace

nlohmann::ordered_json profile_to_json(const Profile& p) {
  nlohmann::ordered_json j = {{"format", kFormat},
                              {"schema_version", kProfileSchema},
                              {"presentation", to_json(p.presentation)},
                              {"searched", p.searched},
                              {"model", p.model},
                              {"model_sha256", p.model_sha256},
                              {"reader", p.reader},
                              {"task", task_name(p.task)},
                              {"objective", p.objective},
                              {"run", {{"store", p.store}, {"id", p.run}}}};
  if (!p.deployed.empty()) {
    j["deployed"] = p.deployed;
    j["why"] = p.why;
    j["winner"] = p.winner;
  }
  return j;
}

std::string deployment_note(const Profile& p) {
  if (p.deployed.empty()) return "";
  return "deployed the " + std::string(p.deployed == "tuned" ? "tuned" : "original") +
         " presentation" +
         (p.why.empty() ? std::string(" (the profile gives no reason)") : ": " + p.why);
}

Profile profile_from_json(const nlohmann::json& j_in, const std::string& where) {
  // A key whose value is null is a key not given (base/json_keys.h; pass 19: "why": null was
  // "must be a string"). Every fault of the document is a UsageError (CLI exit 2, Python
  // ValueError), as its unknown keys are, whether the profile came as a file or as an object.
  const nlohmann::json j = without_nulls(j_in);
  if (!j.is_object() || !j.contains("format") || j["format"] != kFormat)
    throw UsageError(where,
                     "not a ragform tune profile (\"format\": \"ragform-tune-profile\" missing)");
  if (!j.contains("schema_version") || !j["schema_version"].is_number_integer())
    throw UsageError(where, "schema_version: missing or not an integer");
  if (j["schema_version"].get<int64_t>() != kProfileSchema)
    throw UsageError(where, "schema_version: " + json_excerpt(j["schema_version"]) +
                                " is not supported (this build reads " +
                                std::to_string(kProfileSchema) + ")");
  // What profile_to_json writes (base/json_keys.h: a misspelt key is refused, not ignored).
  only_json_keys(j,
                 {"format", "schema_version", "presentation", "searched", "model", "model_sha256",
                  "reader", "task", "objective", "run", "deployed", "why", "winner"},
                 where, "a tune profile");
  Profile p;
  if (!j.contains("presentation")) throw UsageError(where, "presentation: missing");
  p.presentation = presentation_from_json(j["presentation"], where + ": presentation");
  if (j.contains("searched")) {
    if (!j["searched"].is_array()) throw UsageError(where, "searched: must be an array of names");
    for (const auto& d : j["searched"]) {
      if (!d.is_string() || std::find(dimension_names().begin(), dimension_names().end(),
                                      d.get<std::string>()) == dimension_names().end())
        throw UsageError(where, "searched: unknown dimension " + json_excerpt(d));
      p.searched.push_back(d.get<std::string>());
    }
  }
  p.model = string_field(j, "model", where, false);
  p.model_sha256 = string_field(j, "model_sha256", where, false);
  p.reader = string_field(j, "reader", where, false);
  try {
    p.task = parse_task(string_field(j, "task", where, true));
  } catch (const UsageError&) {
    throw UsageError(where, "task: unknown task " + json_excerpt(j["task"]) + " (qa, kv, needle)");
  }
  if (j.contains("objective")) p.objective = string_field(j, "objective", where, false);
  if (j.contains("run")) {
    const nlohmann::json r = without_nulls(j["run"]);
    if (!r.is_object()) throw UsageError(where, "run: must be an object {store, id}");
    only_json_keys(r, {"store", "id"}, where, "a tune profile's 'run'");
    p.store = string_field(r, "store", where + ": run", false);
    if (r.contains("id")) {
      if (!r["id"].is_number_integer() ||
          (r["id"].is_number_unsigned() && r["id"].get<uint64_t>() > uint64_t(INT64_MAX)))
        throw UsageError(where, "run: id: must be an integer of at most 64 bits, signed");
      p.run = r["id"].get<int64_t>();
    }
  }
  p.deployed = string_field(j, "deployed", where, false);
  if (j.contains("deployed") && p.deployed != "tuned" && p.deployed != "original")
    throw UsageError(
        where, "deployed: must be \"tuned\" or \"original\", got " + json_excerpt(j["deployed"]));
  p.why = string_field(j, "why", where, false);
  p.winner = string_field(j, "winner", where, false);
  // "original" says the presentation is the original one (any k: the control is the largest k that
  // fits); a profile that says so of another presentation contradicts itself.
  if (p.deployed == "original") {
    const Presentation o = original_presentation();
    const Presentation& q = p.presentation;
    if (q.delimiter != o.delimiter || q.format != o.format || q.order != o.order ||
        q.spotlight != o.spotlight || q.spotlight_tokens != o.spotlight_tokens)
      throw UsageError(where, "deployed: \"original\", but the presentation is " +
                                  excerpt(label(q)) + ", not the original presentation");
  }
  validate(p.presentation, p.task, where + ": presentation");
  return p;
}

Profile load_profile(const std::string& path) {
  return profile_from_json(read_settings_json_file(path, "profile"), path);
}

void save_profile(const std::string& path, const Profile& p) {
  write_file_atomically(path, profile_to_json(p).dump(2) + "\n", "profile");
}

}  // namespace ragform::tune
