#include "reader/generate_params.h"

#include "engine/runtime/generate.h"

namespace ragform::reader {

GenerateParams generate_params(GenerateRequest o) {
  check_options(o);
  // The sampler's (0, 1]: the declared range's closed end at 0 is an empty nucleus.
  if (o.top_p == 0) throw OptionError("top_p", "must be above 0: an empty nucleus holds no token");
  if (std::string why = stop_strings_problem(o.stop); !why.empty()) throw OptionError("stop", why);
  GenerateParams p;
  p.max_tokens = int(o.n_predict);
  p.temperature = o.temp;
  p.top_k = int(o.top_k);
  p.top_p = o.top_p;
  p.seed = o.seed;
  p.stop = std::move(o.stop);
  p.stop_after_line = o.stop_after_line;
  p.ignore_eos = o.ignore_eos;
  return p;
}

void cut_after_line(Generation& g, const GenerateParams& p) {
  if (!p.stop_after_line) return;
  if (const size_t cut = runtime::line_stop_at(g.text); cut != std::string::npos) {
    g.text.resize(cut);
    g.finish_reason = "stop";
  }
}

}  // namespace ragform::reader
