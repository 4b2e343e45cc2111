// `ragform tune` — the front door of the tune layer: include this one header. tune composes the
// three pipelines (like reproduce, a layer above them) to search how retrieved context is shown
// to a reader, and deploys the answer as one profile.
//   Presentation, render(record, presentation, task, template)     (presentation.h): the one
//       renderer behind tune, `ragform present`, /v1/rag/present and ragform.present
//   Profile, load_profile / save_profile / profile_from_json      (profile.h)
//   Space, default_space, load_space_file, set_dimension, candidates (space.h)
//   run_tune(reader, store, TuneOptions) -> TuneSummary            (run.h): the budgeted search,
//       its held-out evaluation and the summary `tune --json` prints (summary_json)
//   the judge's pieces (grading, perturbations, objectives)       (judge.h)
//   the halving schedule                                          (search.h)
// present.h (the profile applied to records: `ragform present`, /v1/rag/present, Python) is
// included by its front ends directly.
#pragma once
#include "tune/judge.h"
#include "tune/presentation.h"
#include "tune/profile.h"
#include "tune/run.h"
#include "tune/search.h"
#include "tune/space.h"
