// C-NORM (cnorm-surface-formatting.txt) — the front door: include this one header to calibrate a
// delimiter per model and task, deploy it, and evaluate it. Start with:
//   run_calibrate(reader, store, items, CalibrateOptions) -> CalibrateSummary   (run.h; 4.1-4.2)
//   run_eval(reader, store, items_per_seed, EvalOptions) -> EvalSummary        (run.h; 5.1)
//   run_longbench(reader, store, items, LongbenchOptions) -> LongbenchSummary  (run.h; 5.2)
//   apply_profile(profile, record) -> Applied                                  (apply.h; 4.3)
//   format_text(task, text, profile_format(profile))                           (tasks.h; 4.3)
//   load_profile / save_profile / profile_from_json                            (calibrate.h)
//   build_qa_items, build_kv_items, make_needle_items, load_template           (tasks.h)
//   attention_balance_score                                                    (abs.h)
//   run_position_bias -> BiasCurve; calibrated_relevance, rank_documents (position_bias.h,
//   relevance.h: Found in the Middle's positional bias and calibrated attention)
//   needle_jsonl, calibration_lines, eval_lines: what the front ends write      (outputs.h)
// The headers below are the pieces these are made of (the store-less calibrate() and
// run_sweep(), the delimiter rule, the analyses); pipelines/cnorm/detail/ is not public.
#pragma once
#include "pipelines/cnorm/abs.h"
#include "pipelines/cnorm/analysis.h"
#include "pipelines/cnorm/apply.h"
#include "pipelines/cnorm/calibrate.h"
#include "pipelines/cnorm/format.h"
#include "pipelines/cnorm/kvgen.h"
#include "pipelines/cnorm/longbench.h"
#include "pipelines/cnorm/outputs.h"
#include "pipelines/cnorm/position_bias.h"
#include "pipelines/cnorm/relevance.h"
#include "pipelines/cnorm/run.h"
#include "pipelines/cnorm/setup.h"
#include "pipelines/cnorm/sweep.h"
#include "pipelines/cnorm/system_prompts.h"
#include "pipelines/cnorm/tasks.h"
