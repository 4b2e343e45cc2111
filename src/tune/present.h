// present: a tuned profile (profile.h) applied to new records — the one function behind
// `ragform present`, the server's POST /v1/rag/present and Python's ragform.present, so the three
// front ends render the same bytes for the same profile and record.
//
// A record is one JSON object in any format the dataset loaders read (eval/datasets.h), detected
// from its own fields: canonical QA records (and HotpotQA distractor records, whose paragraphs are
// the documents) for qa and needle profiles, lost-in-the-middle KV records for kv profiles. The
// profile's task only picks the prompt template (presentation.h template_for); every profile
// applies to any canonical QA record, including profiles tuned on the needle task.
//
// The object each front end prints or returns for one record (presented_json), keys in order:
//   {"id", "prompt", "documents" (shown), "gold_position" (-1: none or dropped by k),
//    "task", "presentation" (label(): the applied value of every dimension),
//    "prompt_tokens" (only when a reader counted them: its own tokenisation, chat wrapping
//    included, as the reader would feed the prompt)}
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/options.h"
#include "eval/datasets.h"
#include "tune/profile.h"

namespace ragform::reader {
class Reader;
}

namespace ragform::tune {

// `present`'s options, declared once (base/options.h): the CLI's --profile (cli/cmd_present.cpp
// through cli/option_flags.h), the keyword and signature of Python's ragform.present
// (python/src/tune.cpp, ragform._ragform.options("present")) and the server's "profile" field
// (server/api_present.cpp) are this declaration. The profile is a file's path for the CLI and
// Python; Python also takes the file's JSON as a dict, and the server takes only that (a client
// names no server-side file). The records (--input, record=, "record"/"records") and the reader
// that counts tokens are each front end's own, as --json is the CLI's.
struct PresentRequest {
  std::string profile;

  template <class V>
  void visit(V&& v) {
    v(OptionDecl{"profile", "--profile", "FILE", "profile from ragform tune"}.need().first(),
      profile);
  }
};

// The request's profile file, read (load_profile) and checked (check_profile): a profile that
// cannot render fails before any record is read.
Profile present_profile(const PresentRequest& request);

struct Presented {
  std::string id;
  std::string prompt;
  size_t documents = 0;
  int gold_position = -1;
  std::optional<int> prompt_tokens;
};

// Throws UsageError "profile: <why>" when the profile's presentation cannot be rendered for its
// task (validate()). Callers check a profile once before a stream of records.
void check_profile(const Profile& profile);

// The record rendered under the profile's presentation in its task's template. A record of no
// known format, with a bad field or without documents is an eval::RowError naming the reason (the
// CLI adds FILE:LINE, the server the request field, Python raises ValueError). `counter`, when
// given, counts the prompt's tokens; a prompt it refuses (longer than its context) is a RowError
// too, and one longer in bytes than its context can hold (reader::PromptBound) is refused without
// being tokenised.
// `origin`: the record's line in its file (or 1-based place in a request's list) and its member
// name in a keyed file, which name a record without an id ("litm-qa:3", as every other command
// names it; pass 20: all were "litm-qa:0").
Presented present(const nlohmann::json& record, const Profile& profile,
                  reader::Reader* counter = nullptr, const eval::RowOrigin& origin = {1, ""});

nlohmann::ordered_json presented_json(const Presented& p, const Profile& profile);

// "" when the profile was tuned on the model whose SHA-256 is `model_sha256` (or records no
// model); else a note naming both models: a presentation measured on one model is not known to
// hold on another. The CLI prints it on stderr when `present -m` names a model.
std::string model_mismatch_note(const Profile& profile, const std::string& model_sha256,
                                const std::string& model_name);

}  // namespace ragform::tune
