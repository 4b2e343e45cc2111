#include "retrieval/questions.h"

#include <set>

#include "eval/datasets.h"

namespace ragform::retrieval {

namespace {

const std::set<std::string>& dropped_fields() {
  static const std::set<std::string> s = {"id",
                                          "_id",
                                          "question",
                                          "answers",
                                          "answer",
                                          "ctxs",
                                          "context",
                                          "supporting_facts",
                                          "golden_answers",
                                          "adv_texts",
                                          "incorrect answer",
                                          "correct answer",
                                          "ordered_kv_records",
                                          "choice_A",
                                          "choice_B",
                                          "choice_C",
                                          "choice_D"};
  return s;
}

}  // namespace

namespace {
// Everything but the other fields, which the two forms copy or move.
Question question_fields(const nlohmann::json& row, size_t line, const std::string& id_if_none);
}  // namespace

Question question_from_json(const nlohmann::json& row, size_t line, const std::string& id_if_none) {
  Question q = question_fields(row, line, id_if_none);
  for (auto it = row.begin(); it != row.end(); ++it)
    if (!dropped_fields().count(it.key())) q.extra[it.key()] = it.value();
  return q;
}

Question question_from_json(nlohmann::json&& row, size_t line, const std::string& id_if_none) {
  Question q = question_fields(row, line, id_if_none);
  for (auto it = row.begin(); it != row.end(); ++it)
    if (!dropped_fields().count(it.key())) q.extra[it.key()] = std::move(it.value());
  return q;
}

namespace {
Question question_fields(const nlohmann::json& row, size_t line, const std::string& id_if_none) {
  Question q;
  auto qit = row.find("question");
  if (qit == row.end()) throw eval::RowError("missing field 'question'");
  if (!qit->is_string())
    throw eval::RowError(std::string("field 'question': expected string, got ") + qit->type_name());
  q.question = qit->get<std::string>();
  // Answers and ids as the dataset loaders read them, when the record is one of their formats.
  if (auto f = eval::detect_format(row)) {
    eval::QaRecord r = eval::to_qa_record(row, *f, {line, id_if_none});
    q.answers = r.answers;
    q.id = r.id;
  }
  for (const char* key : {"id", "_id"}) {
    auto it = row.find(key);
    if (it == row.end() || it->is_null() || !q.id.empty()) continue;
    if (it->is_string())
      q.id = it->get<std::string>();
    else if (it->is_number_integer())
      q.id = it->dump();
    else  // 7.5 or true was replaced by a generated id without a word (pass 19)
      throw eval::RowError(std::string("field '") + key +
                           "': expected a string or an integer, got " + it->type_name());
  }
  if (q.id.empty()) q.id = id_if_none.empty() ? "line:" + std::to_string(line) : id_if_none;
  return q;
}
}  // namespace

nlohmann::ordered_json retrieval_row(const Question& q, const std::vector<Retrieved>& ctxs) {
  nlohmann::ordered_json j;
  j["id"] = q.id;
  j["question"] = q.question;
  j["answers"] = q.answers;
  for (auto it = q.extra.begin(); it != q.extra.end(); ++it) j[it.key()] = it.value();
  nlohmann::ordered_json cs = nlohmann::ordered_json::array();
  for (const auto& c : ctxs) {
    nlohmann::ordered_json x;
    x["id"] = c.id;
    x["title"] = c.title;
    x["text"] = c.text;
    x["score"] = c.score;
    x["rank"] = c.rank;
    cs.push_back(std::move(x));
  }
  j["ctxs"] = std::move(cs);
  return j;
}

}  // namespace ragform::retrieval
