// The runner contract every pipeline shares — the front door of pipelines/common: include this
// one header. Every verb of a pipeline has the one shape
//   run_<verb>(Reader& | Encoder&, RunStore&, inputs, Options{origin, hooks, ...}) -> Summary
// and uses what is here for the parts that are the same in all of them:
//   RunHooks            notes and progress for the caller (every member may be empty); Stage
//   RunOrigin           what ran the run (tool version, model, reader), filled once and written
//                       into a store::RunConfig by record_origin()
//   begin_or_resume()   the run of an identity, with the rows it already holds
//   tool_version()      "0.1.0 (git <describe>)", the one version string of runs and --version
// Layer: below the three pipelines (reader/, store/ and base/ only).
#pragma once
#include "pipelines/common/run.h"
#include "pipelines/common/version.h"
