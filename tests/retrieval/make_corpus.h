// The corpus of the shared data's Wikipedia paragraphs, generated at test time by the project's
// script (scripts/make-corpus.py), never copied into the repository.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace ragform::testing {

// Writes the corpus into `dir`/corpus.jsonl (only = "", "hotpotqa" or "nq") and returns its path;
// fails the test when the shared data or the script is missing.
inline std::filesystem::path make_corpus(const std::filesystem::path& dir,
                                         const std::string& only) {
  const auto data = shared_path("data");
  EXPECT_TRUE(std::filesystem::exists(data / "hotpotqa-distractor" / "dev.jsonl"))
      << "missing shared data: " << data;
  const auto out = dir / "corpus.jsonl";
  std::string cmd = "/usr/bin/python3 '" RAGFORM_SOURCE_DIR "/scripts/make-corpus.py' --shared '" +
                    shared_dir().string() + "' -o '" + out.string() + "'" +
                    (only.empty() ? "" : " --only " + only) + " 2>/dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return out;
}

}  // namespace ragform::testing
