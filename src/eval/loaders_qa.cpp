// Loaders of the flat QA formats: lost-in-the-middle QA, NQ-open, FlashRAG and PoisonedRAG.
//
// lost-in-the-middle QA (nelson-liu/lost-in-the-middle, qa_data/*.jsonl.gz), one object per line:
//   {"question": str, "answers": [str], "ctxs": [{"title": str, "text": str, "hasanswer": bool,
//    "isgold": bool, ("id": str, "score": num|str, ...)}], ("nq_annotated_gold": {...})}
// NQ-open (google-research-datasets/natural-questions, nq_open/):  {"question": str, "answer":
// [str]} FlashRAG (RUC-NLPIR/FlashRAG datasets): {"id": str, "question": str, "golden_answers":
// [str],
//   "metadata": {...}}
// PoisonedRAG (sleeepeer/PoisonedRAG, results/adv_targeted_results/*.json), one JSON object keyed
//   by id: {"<id>": {"id": str, "question": str, "correct answer": str, "incorrect answer": str,
//   "adv_texts": [str]}}
#include "eval/loaders_fields.h"

namespace ragform::eval::loaders {

using nlohmann::json;
namespace f = fields;

QaRecord litm_qa(const json& row, const std::string& id) {
  QaRecord r;
  r.id = id;
  r.question = f::need_string(row, "question");
  r.answers = f::need_answer_list(row, "answers");
  if (const json* ctxs = f::find(row, "ctxs")) {
    if (!ctxs->is_array()) f::wrong_type("ctxs", "array", *ctxs);
    r.ctxs.reserve(ctxs->size());
    for (size_t i = 0; i < ctxs->size(); ++i) {
      const json& c = (*ctxs)[i];
      const std::string path = f::at("ctxs", i);
      if (!c.is_object()) f::wrong_type(path, "object", c);
      Context ctx;
      ctx.id = f::opt_id(c, "id", path).value_or(id + "/" + std::to_string(i));
      ctx.title = f::opt_string(c, "title", path);
      ctx.text = f::need_string(c, "text", path);
      ctx.hasanswer = f::opt_bool(c, "hasanswer", path);
      ctx.isgold = f::opt_bool(c, "isgold", path).value_or(false);
      ctx.score = f::opt_number(c, "score", path);
      r.ctxs.push_back(std::move(ctx));
    }
  }
  return r;
}

QaRecord nq_open(const json& row, const std::string& id) {
  QaRecord r;
  r.id = id;
  r.question = f::need_string(row, "question");
  r.answers = f::need_answer_list(row, "answer");
  return r;
}

QaRecord flashrag(const json& row, const std::string& id) {
  QaRecord r;
  r.id = id;
  r.question = f::need_string(row, "question");
  r.answers = f::need_answer_list(row, "golden_answers");
  if (const json* m = f::find(row, "metadata"); m && !m->is_object())
    f::wrong_type("metadata", "object", *m);
  return r;
}

QaRecord poisonedrag(const json& row, const std::string& id) {
  QaRecord r;
  r.id = id;
  r.question = f::need_string(row, "question");
  r.answers = {f::need_answer(row, "correct answer")};
  r.poison = PoisonExtra{f::need_string(row, "incorrect answer")};
  auto adv = f::need_string_list(row, "adv_texts");
  r.ctxs.reserve(adv.size());
  for (size_t i = 0; i < adv.size(); ++i) {
    Context ctx;
    ctx.id = id + "/" + std::to_string(i);
    ctx.text = std::move(adv[i]);
    ctx.adversarial = true;
    r.ctxs.push_back(std::move(ctx));
  }
  return r;
}

}  // namespace ragform::eval::loaders
