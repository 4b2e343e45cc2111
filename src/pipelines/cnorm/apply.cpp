#include "pipelines/cnorm/apply.h"

#include <string>

#include "base/error.h"
#include "eval/jsonl.h"

namespace ragform::cnorm {

Format applied_format(const Profile& profile) {
  Format f = profile_format(profile);
  if (!f.wrapper.empty())
    throw UsageError("cnorm apply", "the profile's best candidate is the document format '" +
                                        f.wrapper +
                                        "'; apply writes text fields, wrap documents when "
                                        "building the prompt instead");
  return f;
}

Applied apply_profile(const Profile& profile, nlohmann::json record) {
  const Format f = applied_format(profile);
  const Task task = parse_task(profile.task);
  Applied out;
  if (record.contains("ctxs")) {
    nlohmann::json& ctxs = record["ctxs"];
    if (!ctxs.is_array()) throw eval::RowError("field 'ctxs': expected array");
    for (size_t i = 0; i < ctxs.size(); ++i) {
      nlohmann::json& c = ctxs[i];
      if (!c.is_object() || !c.contains("text") || !c["text"].is_string())
        throw eval::RowError("field 'ctxs[" + std::to_string(i) + "].text': expected string");
      c["text"] = format_text(task, c["text"].get<std::string>(), f);
      ++out.documents;
    }
  } else if (record.contains("text") && record["text"].is_string()) {
    record["text"] = format_text(task, record["text"].get<std::string>(), f);
    ++out.documents;
  } else {
    throw eval::RowError("expected a \"ctxs\" array or a \"text\" string");
  }
  out.record = std::move(record);
  return out;
}

}  // namespace ragform::cnorm
