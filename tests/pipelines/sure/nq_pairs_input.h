// Shared input of the SURE fixture tests: the first n NQ-Open questions, each with its gold passage
// cut to two sentences (the fixture model's context is small) and the next question's passage as
// a noise document. Written as canonical QA JSONL; returns the file's text.
#pragma once
#include <algorithm>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "eval/datasets.h"
#include "pipelines/sure/perturb_rules.h"

namespace ragform::testing {

inline std::string nq_pairs_input(const std::filesystem::path& nq_file, size_t n) {
  eval::LoadOptions lo;
  lo.limit = n + 1;
  auto recs = eval::load_qa_file(nq_file.string(), lo).records;
  std::string input;
  for (size_t i = 0; i < n; ++i) {
    nlohmann::json j;
    j["id"] = recs[i].id;
    j["question"] = recs[i].question;
    j["answers"] = recs[i].answers;
    for (size_t d : {i, i + 1}) {
      auto s = sure::document_sentences(recs[d].ctxs[0].text);
      s.resize(std::min<size_t>(s.size(), 2));
      j["ctxs"].push_back({{"title", recs[d].ctxs[0].title}, {"text", sure::join_sentences(s)}});
    }
    input += j.dump() + "\n";
  }
  return input;
}

}  // namespace ragform::testing
