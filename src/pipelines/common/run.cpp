#include "pipelines/common/run.h"

#include "pipelines/common/version.h"

#include <utility>

namespace ragform::common {

RunOrigin origin_of(const reader::Reader& r, std::string tool_version, std::string model_path,
                    std::string model_sha256) {
  RunOrigin o;
  o.tool_version = std::move(tool_version);
  o.model_path = std::move(model_path);
  o.model_sha256 = std::move(model_sha256);
  o.reader = r.describe();
  o.chat_mode = r.chat_mode();
  o.steering = r.steering.describe();
  return o;
}

RunOrigin origin_for(const reader::Reader& r) {
  const reader::Reader::ModelFile f = r.model_file();
  return origin_of(r, tool_version(), f.path, f.sha256);
}

void record_origin(store::RunConfig& rc, const RunOrigin& o) {
  rc.tool_version = o.tool_version;
  rc.model_path = o.model_path;
  rc.model_sha256 = o.model_sha256;
  rc.reader = o.steering == "off" ? o.reader : o.reader + "#steer=" + o.steering;
  rc.chat_mode = o.chat_mode;
}

Resumed begin_or_resume(store::RunStore& st, store::RunConfig rc, const RunOrigin& origin,
                        const RunHooks& hooks, const std::string& stage, uint64_t total,
                        const std::string& what) {
  record_origin(rc, origin);
  Resumed out;
  out.run = st.begin_run(rc);
  out.done = st.done_keys(out.run);
  if (!out.done.empty())
    hooks.say(stage + ": resuming run " + std::to_string(out.run) + ": " +
              std::to_string(out.done.size()) +
              (total > 0 ? " of " + std::to_string(total) : std::string()) + " " + what +
              " already stored");
  return out;
}

}  // namespace ragform::common
