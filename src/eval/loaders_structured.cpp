// Loaders of the formats with structure beyond question/answers: HotpotQA distractor, lost-in-the-
// middle KV retrieval, LongBench-v2.
//
// HotpotQA distractor, Hugging Face schema (hotpot_qa "distractor" config):
//   {"id": str, "question": str, "answer": str, "type": str, "level": str,
//    "supporting_facts": {"title": [str], "sent_id": [int]},
//    "context": {"title": [str x10], "sentences": [[str] x10]}}
// The original release (hotpot_dev_distractor_v1.json) is accepted too:
//   "_id", "supporting_facts": [[title, sent_id]], "context": [[title, [sentences]]].
// lost-in-the-middle KV retrieval (kv_retrieval_data/*.jsonl.gz):
//   {"ordered_kv_records": [[key, value] x N], "key": str, "value": str}
// LongBench-v2 (THUDM/LongBench-v2 data.json):
//   {"_id": str, "domain": str, "sub_domain": str, "difficulty": "easy"|"hard",
//    "length": "short"|"medium"|"long", "question": str, "choice_A".."choice_D": str,
//    "answer": "A".."D", "context": str}
#include <set>

#include "eval/loaders_fields.h"

namespace ragform::eval::loaders {

using nlohmann::json;
namespace f = fields;

namespace {

struct Paragraph {
  std::string title;
  std::vector<std::string> sentences;
};

std::vector<Paragraph> hotpot_context(const json& row) {
  const json& ctx = f::need(row, "context");
  std::vector<Paragraph> out;
  if (ctx.is_object()) {  // HF: {"title": [...], "sentences": [[...], ...]}
    auto titles = f::need_string_list(ctx, "title", "context");
    const json& sents = f::need_array(ctx, "sentences", "context");
    if (sents.size() != titles.size())
      throw RowError("field 'context': " + std::to_string(titles.size()) + " titles but " +
                     std::to_string(sents.size()) + " sentence lists");
    for (size_t i = 0; i < titles.size(); ++i)
      out.push_back({titles[i], f::as_string_list(sents[i], f::at("context.sentences", i))});
  } else if (ctx.is_array()) {  // original: [[title, [sentences]], ...]
    for (size_t i = 0; i < ctx.size(); ++i) {
      const std::string path = f::at("context", i);
      if (!ctx[i].is_array() || ctx[i].size() != 2)
        f::wrong_type(path, "[title, [sentences]]", ctx[i]);
      out.push_back(
          {f::as_string(ctx[i][0], path + "[0]"), f::as_string_list(ctx[i][1], path + "[1]")});
    }
  } else {
    f::wrong_type("context", "object {title, sentences} or array", ctx);
  }
  return out;
}

std::vector<std::pair<std::string, int>> hotpot_support(const json& row) {
  const json& sf = f::need(row, "supporting_facts");
  std::vector<std::pair<std::string, int>> out;
  if (sf.is_object()) {  // HF: {"title": [...], "sent_id": [...]}
    auto titles = f::need_string_list(sf, "title", "supporting_facts");
    const json& ids = f::need_array(sf, "sent_id", "supporting_facts");
    if (ids.size() != titles.size())
      throw RowError("field 'supporting_facts': " + std::to_string(titles.size()) + " titles but " +
                     std::to_string(ids.size()) + " sent_ids");
    for (size_t i = 0; i < titles.size(); ++i)
      out.emplace_back(titles[i], f::as_int32(ids[i], f::at("supporting_facts.sent_id", i)));
  } else if (sf.is_array()) {  // original: [[title, sent_id], ...]
    for (size_t i = 0; i < sf.size(); ++i) {
      const std::string path = f::at("supporting_facts", i);
      if (!sf[i].is_array() || sf[i].size() != 2) f::wrong_type(path, "[title, sent_id]", sf[i]);
      out.emplace_back(f::as_string(sf[i][0], path + "[0]"), f::as_int32(sf[i][1], path + "[1]"));
    }
  } else {
    f::wrong_type("supporting_facts", "object {title, sent_id} or array", sf);
  }
  return out;
}

}  // namespace

QaRecord hotpotqa(const json& row, const std::string& id) {
  QaRecord r;
  r.id = id;
  r.question = f::need_string(row, "question");
  r.answers = {f::need_answer(row, "answer")};
  HotpotExtra h;
  h.type = f::opt_string(row, "type");
  h.level = f::opt_string(row, "level");
  auto paragraphs = hotpot_context(row);
  auto support = hotpot_support(row);
  std::set<std::string> gold_titles;
  for (auto& [t, s] : support) gold_titles.insert(t);
  for (size_t i = 0; i < paragraphs.size(); ++i) {
    Context c;
    c.id = id + "/" + std::to_string(i);
    c.title = paragraphs[i].title;
    for (auto& s : paragraphs[i].sentences) {
      c.sentence_offsets.push_back(c.text.size());
      c.text += s;
    }
    c.sentences = std::move(paragraphs[i].sentences);
    c.isgold = gold_titles.count(c.title) > 0;
    r.ctxs.push_back(std::move(c));
  }
  for (auto& [title, sent] : support) {
    SupportingFact fact{title, sent, -1, false};
    for (size_t i = 0; i < r.ctxs.size(); ++i) {
      if (r.ctxs[i].title != title) continue;
      fact.context_index = static_cast<int>(i);
      fact.sentence_ok = sent >= 0 && static_cast<size_t>(sent) < r.ctxs[i].sentences.size();
      break;
    }
    h.supporting_facts.push_back(std::move(fact));
  }
  r.hotpot = std::move(h);
  return r;
}

QaRecord litm_kv(const json& row, const std::string& id) {
  QaRecord r;
  r.id = id;
  KvExtra kv;
  kv.key = f::need_string(row, "key");
  kv.value = f::need_string(row, "value");
  const json& recs = f::need_array(row, "ordered_kv_records");
  bool found = false;
  for (size_t i = 0; i < recs.size(); ++i) {
    const std::string path = f::at("ordered_kv_records", i);
    if (!recs[i].is_array() || recs[i].size() != 2)
      f::wrong_type(path, "[key, value] pair", recs[i]);
    kv.records.emplace_back(f::as_string(recs[i][0], path + "[0]"),
                            f::as_string(recs[i][1], path + "[1]"));
    if (kv.records.back().first == kv.key) {
      if (found) throw RowError("key \"" + kv.key + "\" occurs twice in ordered_kv_records");
      if (kv.records.back().second != kv.value)
        throw RowError("ordered_kv_records[" + std::to_string(i) + "] maps key \"" + kv.key +
                       "\" to \"" + kv.records.back().second + "\", not to value \"" + kv.value +
                       "\"");
      found = true;
      kv.gold_index = i;
    }
  }
  if (!found) throw RowError("key \"" + kv.key + "\" is not among ordered_kv_records");
  r.question = kv.key;
  r.answers = {kv.value};
  r.kv = std::move(kv);
  return r;
}

QaRecord longbench_v2(const json& row, const std::string& id) {
  QaRecord r;
  r.id = id;
  r.question = f::need_string(row, "question");
  ChoiceExtra c;
  const char* names[4] = {"choice_A", "choice_B", "choice_C", "choice_D"};
  for (int i = 0; i < 4; ++i) c.choices[static_cast<size_t>(i)] = f::need_string(row, names[i]);
  std::string ans = f::need_string(row, "answer");
  if (ans.size() != 1 || ans[0] < 'A' || ans[0] > 'D')
    throw RowError("field 'answer': expected one of \"A\", \"B\", \"C\", \"D\", got \"" + ans +
                   "\"");
  c.answer = ans[0];
  c.answer_index = ans[0] - 'A';
  c.difficulty = f::need_string(row, "difficulty");
  c.length = f::need_string(row, "length");
  c.domain = f::opt_string(row, "domain");
  c.sub_domain = f::opt_string(row, "sub_domain");
  Context ctx;
  ctx.id = id + "/0";
  ctx.text = f::need_string(row, "context");
  r.ctxs.push_back(std::move(ctx));
  r.answers = {ans};
  r.choice = std::move(c);
  return r;
}

}  // namespace ragform::eval::loaders
