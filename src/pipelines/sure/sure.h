// SURE (sure-spurious-features.txt) — the front door: include this one header to perturb
// documents, keep the pairs that preserve the causal features, and evaluate a reader's robustness.
// Start with:
//   apply_rule(kind, document, RuleOptions, ...) -> Perturbation      (perturb_rules.h; 3.3)
//   run_llm_perturbations(reader, prompts, ...) -> Perturbations      (perturb_llm.h; 3.2-3.3)
//   run_perturb(records, kinds, readers, prompts, PerturbOptions) -> pairs (perturb_plan.h; 3.3:
//                                        plan_pairs, then the reader-written kinds)
//   filter_pairs(pairs, nli_reader, prompts, FilterOptions, counts)   (preserve.h; 3.4)
//   run_prepare(reader, store, prompts, records, PrepareOptions)      (prepare.h; 3.1)
//   run_eval(reader, store, prompts, pairs, EvalRunOptions) -> Summary (evaluate.h; 3.5, store-
//                                                                       backed and resumable)
// The runners follow the contract of pipelines/common/common.h: each begins or resumes its own
// run, records its origin and reports progress through RunHooks.
//   robustness_report(outcomes) -> rows; select_sig and the analyses   (metrics.h, analyses.h)
//   read_pairs / pair_to_json                                         (pairs.h)
//   load_prompts                                                      (prompts.h)
//   pairs_jsonl, filter_lines, report_jsonl: what the front ends write (outputs.h)
// The document renderings the format perturbations use are text/doc_formats.h (shared with
// C-NORM); their real-parser validators are format_parsers.h.
#pragma once
#include "pipelines/sure/analyses.h"
#include "pipelines/sure/attention_run.h"
#include "pipelines/sure/evaluate.h"
#include "pipelines/sure/format_parsers.h"
#include "pipelines/sure/formats.h"
#include "pipelines/sure/metrics.h"
#include "pipelines/sure/nli_encoder.h"
#include "pipelines/sure/outputs.h"
#include "pipelines/sure/pairs.h"
#include "pipelines/sure/perturb_llm.h"
#include "pipelines/sure/perturb_plan.h"
#include "pipelines/sure/perturb_rules.h"
#include "pipelines/sure/prepare.h"
#include "pipelines/sure/preserve.h"
#include "pipelines/sure/prompts.h"
#include "pipelines/sure/requests.h"
#include "pipelines/sure/taxonomy.h"
