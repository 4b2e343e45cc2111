// Test helper: the first three NQ-open questions of the shared oracle file, each with its gold
// passage (edited by `edit`, given the question's index and the passage), written as QA records
// {"id": "q<i>", question, answers, ctxs: [gold]} to DIR/qa.jsonl. For the remote-reader fixtures
// (remote_failures_fixture_test.cpp, secret_echo_fixture_test.cpp).
#pragma once
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace ragform::testing {

inline std::filesystem::path nq_head_qa(
    const std::filesystem::path& dir,
    const std::function<std::string(int, std::string)>& edit = {}) {
  const std::filesystem::path nq = shared_path("data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  EXPECT_TRUE(std::filesystem::exists(nq)) << "missing shared file: " << nq;
  const std::string cmd = "zcat " + quoted(nq) + " | head -3 > " + quoted(dir / "raw.jsonl");
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  std::string out;
  int i = 0;
  for (auto& j : json_lines(read_file(dir / "raw.jsonl"))) {
    std::string t = j["ctxs"][0]["text"];
    if (edit) t = edit(i, t);
    nlohmann::json o = {{"id", "q" + std::to_string(i++)},
                        {"question", j["question"]},
                        {"answers", j["answers"]},
                        {"ctxs", {{{"title", j["ctxs"][0]["title"]}, {"text", t}}}}};
    out += o.dump() + "\n";
  }
  write_file(dir / "qa.jsonl", out);
  return dir / "qa.jsonl";
}

}  // namespace ragform::testing
