// The runner contract (common.h): how a pipeline's runner reports to its caller (RunHooks, Stage),
// what it records about what ran it (RunOrigin, record_origin) and how it finds the run of its
// identity in a store with the rows already done (begin_or_resume).
#pragma once
#include <cstdint>
#include <set>
#include <string>

#include "base/run_hooks.h"
#include "reader/reader.h"
#include "store/run_store.h"

namespace ragform::common {

// How a runner talks to its caller (notes, progress stages) and one progress stage as an RAII
// guard: defined in base/run_hooks.h, below retrieval, whose index build reports the same way. The
// CLI prints notes on stderr and draws base/progress.h's line for each stage; Python calls its
// progress callback.
using RunHooks = ragform::RunHooks;
using Stage = ragform::Stage;

// What a run records about what ran it: store::RunConfig's tool_version and model_path (kept,
// not identity) and model_sha256, reader and chat_mode (identity). Filled once by the caller:
// origin_of() for a run made by a reader, or the tool version alone for a run without one (its
// encoder, if any, is part of the run's config), whose reader and chat mode are "none".
struct RunOrigin {
  std::string tool_version;  // tool_version() (version.h)
  std::string model_path;    // as the user gave it; "" for none or a remote model
  std::string model_sha256;  // of the model file; "" for none or a remote model
  // Reader::describe(): the backend and model file, with the engine options that change numbers
  // (a native reader names its F16 GEMM), so that runs under different ones never merge.
  std::string reader = "none";
  std::string chat_mode = "none";  // Reader::chat_mode(): "raw", a chat family, "none"
  // Reader::steering's describe(): "off", or the rule, spans, layers and heads. Steering changes
  // every number the reader gives, so record_origin makes it part of the reader's identity
  // (steered and unsteered runs never merge; unsteered runs keep the identity they had).
  std::string steering = "off";
};

// The origin of a run made by `r` on the model at model_path.
RunOrigin origin_of(const reader::Reader& r, std::string tool_version, std::string model_path,
                    std::string model_sha256);

// The origin of a run made by `r` in this build: the reader's own model file and its SHA-256
// (Reader::model_file(); none for remote and Python readers) and tool_version(). Every front end
// fills a runner's origin with it, so the CLI, Python and the server record the same provenance.
RunOrigin origin_for(const reader::Reader& r);

// Writes the origin into rc: the one place provenance enters a run store.
void record_origin(store::RunConfig& rc, const RunOrigin& o);

// The run of rc's identity (created when new) and its finished rows.
struct Resumed {
  int64_t run = 0;
  std::set<store::Key> done;  // (instance, variant) of the rows with status ok
};

// begin_run(rc) with the origin recorded, then its done keys. When rows are already stored:
// note "<stage>: resuming run N: D of T <what> already stored" (T = 0: "D <what> already
// stored").
Resumed begin_or_resume(store::RunStore& st, store::RunConfig rc, const RunOrigin& origin,
                        const RunHooks& hooks, const std::string& stage, uint64_t total,
                        const std::string& what);

}  // namespace ragform::common
