#include "reader/generate_params.h"

#include "base/error.h"

namespace ragform::reader {

void check_generate_params(const GenerateParams& p, const GenerateParamNames& names) {
  if (p.max_tokens < 0) throw UsageError(names.max_tokens, "must be >= 0");
  // Written so that NaN fails: every comparison with it is false.
  if (!(p.temperature >= 0 && p.temperature <= kMaxTemperature))
    throw UsageError(names.temperature, "must be in [0, 100]");
  if (!(p.top_p > 0 && p.top_p <= 1)) throw UsageError(names.top_p, "must be in (0, 1]");
  if (p.top_k < 0) throw UsageError(names.top_k, "must be >= 0");
}

}  // namespace ragform::reader
