#include "tune/present.h"

#include "base/error.h"
#include "base/excerpt.h"
#include "eval/datasets.h"
#include "eval/jsonl.h"
#include "reader/reader.h"
#include "tune/presentation.h"

namespace ragform::tune {

namespace {

// The record as the loaders read it: its format decided by its own fields, so one stream may mix
// the layouts a user concatenated.
eval::QaRecord record_of(const nlohmann::json& j, const eval::RowOrigin& origin) {
  if (!j.is_object())
    throw eval::RowError(std::string("expected a JSON object, got ") + j.type_name());
  const std::optional<eval::Format> f = eval::detect_format(j);
  if (!f)
    throw eval::RowError(
        "not a QA record: no field names its format (ctxs or answers for QA records, "
        "ordered_kv_records for key-value records)");
  return eval::to_qa_record(j, *f, origin);
}

// The tokens the reader would feed. A reader that refuses the prompt (longer than its context)
// refuses this record's presentation: the error names the record, not the whole input. A prompt
// longer in bytes than any prompt that fits is refused without being tokenised (a 1 MB request
// rendered to 8.5 MB took 6 s and 930 MB to count).
int count(reader::Reader& counter, const std::string& prompt) {
  if (const std::optional<reader::PromptBound> b = counter.prompt_bound();
      b && prompt.size() > b->most_bytes())
    throw eval::RowError("reader: prompt of " + std::to_string(prompt.size()) +
                         " bytes exceeds the context size n_ctx = " + std::to_string(b->n_ctx) +
                         " however it is tokenised (no token of the vocabulary is longer than " +
                         std::to_string(b->piece_bytes) + " bytes)");
  try {
    return counter.count_tokens(prompt);
  } catch (const FileError&) {
    throw;
  } catch (const Error& e) {
    throw eval::RowError(e.what());
  }
}

}  // namespace

void check_profile(const Profile& profile) {
  validate(profile.presentation, profile.task, "profile");
}

Profile present_profile(const PresentRequest& request) {
  const Profile profile = load_profile(request.profile);
  check_profile(profile);
  return profile;
}

Presented present(const nlohmann::json& record, const Profile& profile, reader::Reader* counter,
                  const eval::RowOrigin& origin) {
  check_profile(profile);
  const eval::QaRecord r = record_of(record, origin);
  if (profile.task == Task::Kv && !r.kv)
    throw eval::RowError(
        "a kv profile renders key-value records (ordered_kv_records, key, value); this is a " +
        std::string(r.source_format) + " record");
  if (profile.task != Task::Kv && r.ctxs.empty())
    throw eval::RowError("record " + r.id + " has no documents (ctxs) to present");
  Rendered rendered;
  try {
    rendered = render(r, profile.presentation, profile.task, template_for(profile.task));
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw eval::RowError(e.what());  // a record the renderer cannot lay out: the record's fault
  }
  Presented out;
  out.id = r.id;
  out.prompt = std::move(rendered.prompt);
  out.documents = rendered.documents;
  out.gold_position = rendered.gold_position;
  if (counter) out.prompt_tokens = count(*counter, out.prompt);
  return out;
}

nlohmann::ordered_json presented_json(const Presented& p, const Profile& profile) {
  nlohmann::ordered_json j = {{"id", p.id},
                              {"prompt", p.prompt},
                              {"documents", p.documents},
                              {"gold_position", p.gold_position},
                              {"task", task_name(profile.task)},
                              {"presentation", label(profile.presentation)}};
  if (p.prompt_tokens) j["prompt_tokens"] = *p.prompt_tokens;
  return j;
}

std::string model_mismatch_note(const Profile& profile, const std::string& model_sha256,
                                const std::string& model_name) {
  if (profile.model_sha256.empty() || profile.model_sha256 == model_sha256) return "";
  auto short_sha = [](const std::string& s) { return s.substr(0, 12); };
  return "note: the profile was tuned on " +
         (profile.model.empty() ? std::string("another model") : excerpt(profile.model)) +
         " (sha256 " + short_sha(profile.model_sha256) + "...), not on " + model_name +
         " (sha256 " + short_sha(model_sha256) +
         "...): its presentation was chosen by that model's answers and may not be the best "
         "for this one";
}

}  // namespace ragform::tune
