// SpotlightRAG — the front door: include this one header to score, rank and select evidence
// sentences and to evaluate the selection. Start with:
//   run_eval(encoder, store, records, RunOptions) -> RunSummary   (run.h; store-backed, resumes)
//   run_generate(reader, store, records, GenerateOptions): answers to run_eval's prompts (run.h)
//   run_sweeps(encoder, records, SweepOptions): recall, Table 3/4 sweeps, EM (sweeps.h; no store)
//   selection_json(id, selection, options): a selection's JSON for every front end
//   score_question(encoder, question, documents, ScoreParams)          (scoring.h; eqs. 3-8)
//   select_and_annotate(question, documents, scored, SelectParams)     (select.h; eqs. 9-10)
//   gold_sentences, recall_at, the baselines rank_lead/random/bm25     (evaluate.h)
//   learned alpha: train-alpha's fit (train_alpha.h) and its file (alpha.h; --alpha learned:FILE)
//   answer_and_grade(reader, prompt, answers, max_tokens): EM           (answer.h; end to end)
//   encoders: StaticEncoder, HiddenEncoder (encoder.h), ModelEncoder (model_encoder.h)
#pragma once
#include "pipelines/spotlight/alpha.h"
#include "pipelines/spotlight/answer.h"
#include "pipelines/spotlight/calibrated_prior.h"
#include "pipelines/spotlight/encoder.h"
#include "pipelines/spotlight/evaluate.h"
#include "pipelines/spotlight/lexical.h"
#include "pipelines/spotlight/model_encoder.h"
#include "pipelines/spotlight/run.h"
#include "pipelines/spotlight/scoring.h"
#include "pipelines/spotlight/select.h"
#include "pipelines/spotlight/selection_json.h"
#include "pipelines/spotlight/sweeps.h"
#include "pipelines/spotlight/train_alpha.h"
