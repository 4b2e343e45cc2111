// Where a reader's answers came from, for a run's metadata (RunStore::set_run_meta), never for its
// identity: a study is one run whichever servers measured it (reader/server_pool.h), so the
// servers are recorded beside the run, not in it.
#pragma once
#include <nlohmann/json.hpp>

#include "reader/reader.h"

namespace ragform::reader {

// The run metadata "servers" of a remote reader: [{"url": U, "answered": N}, ...] in the order
// given, N the requests that server answered through this reader (this invocation); null for a
// reader that is not remote (its describe() names its file).
nlohmann::json servers_meta(const Reader& r);

}  // namespace ragform::reader
