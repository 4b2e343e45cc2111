// ragform.present for Python (python/ragform/_present.py): a profile from `ragform tune` applied
// to one record by tune::present, the function `ragform present` and the server's
// /v1/rag/present call, so the three give the same prompt for the same profile and record.
#include "bindings.h"
#include "options.h"
#include "reader/reader.h"
#include "tune/present.h"

namespace ragform::py {

namespace {

// A profile as a dict (the profile file's JSON) or the path of a profile file: the declared
// `profile` (tune/present.h PresentRequest), bound as every declared keyword is.
tune::Profile profile_arg(const pyb::handle& profile) {
  if (pyb::isinstance<pyb::str>(profile)) {
    tune::PresentRequest req;
    pyb::dict kw;
    kw["profile"] = profile;
    bind_keywords(req, kw, "present");
    return tune::present_profile(req);  // FileError: OSError
  }
  if (!pyb::isinstance<pyb::dict>(profile))
    throw UsageError("present", "profile must be a dict (a profile file's JSON) or a path");
  const nlohmann::json j = to_json(profile, "profile");
  // An invalid profile is the caller's input: ValueError, as the CLI's exit code 2.
  return parse_arg([&] { return tune::profile_from_json(j, "profile"); });
}

pyb::object present(const pyb::handle& record, const pyb::handle& profile, reader::Reader* model) {
  const tune::Profile prof = profile_arg(profile);
  if (!pyb::isinstance<pyb::dict>(record))
    throw UsageError("present", "the record must be a dict (one JSONL line's object)");
  const nlohmann::json rec = to_json(record, "record");
  return from_json(tune::presented_json(tune::present(rec, prof, model), prof));
}

}  // namespace

void bind_tune(pyb::module_& m) {
  using pyb::arg;
  m.def("_present", &present, arg("record"), arg("profile"), arg("model") = pyb::none());
}

}  // namespace ragform::py
