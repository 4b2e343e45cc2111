// `ragform cnorm` command lines for the C-NORM fixture tests (run them with run_ragform): the
// model, the profile and the flags that differ from test to test.
#pragma once
#include <filesystem>
#include <string>

#include "support/test_support.h"

namespace ragform::testing {

// `cnorm calibrate` of `model` with `flags`, writing the profile to `profile`.
inline std::string cnorm_calibrate(const std::filesystem::path& model, const std::string& flags,
                                   const std::filesystem::path& profile) {
  return "cnorm calibrate -m " + quoted(model) + " " + flags + " -o " + quoted(profile);
}

// `cnorm eval` of `model` with the profile `profile` and `flags`.
inline std::string cnorm_eval(const std::filesystem::path& model,
                              const std::filesystem::path& profile, const std::string& flags) {
  return "cnorm eval -m " + quoted(model) + " --profile " + quoted(profile) + " " + flags;
}

}  // namespace ragform::testing
