#include "reader/encoder_settings.h"

#include <vector>

#include "base/error.h"

namespace ragform::reader {

const OptionInfo& encoder_setting(const std::string& key) {
  static const std::vector<OptionInfo> all = option_infos<EncoderSettings>();
  for (const OptionInfo& o : all)
    if (o.decl.key == key) return o;
  throw Error("encoder settings", "no setting '" + key + "'");
}

NativeEncoderOptions native_encoder_options(const EncoderSettings& s) {
  EncoderSettings checked = s;
  check_options(checked);  // every range, before a thread starts or a file opens
  // The engine part by the reader's own check and conversion (engine_settings.h).
  EngineSettings e;
  e.threads = s.threads;
  e.cpu = s.cpu;
  e.load = s.load;
  e.numerics = s.numerics;
  e.f16_gemm = s.f16_gemm;
  return native_encoder_options(s, engine_options(e));
}

NativeEncoderOptions native_encoder_options(const EncoderSettings& s, const EngineOptions& engine) {
  EncoderSettings checked = s;
  check_options(checked);
  NativeEncoderOptions o;
  o.engine = engine;
  o.truncate = option_choice("truncate", s.truncate, {"right", "error"}) == 0
                   ? runtime::Truncate::Right
                   : runtime::Truncate::Error;
  o.max_tokens = s.max_tokens;
  o.max_batch_tokens = s.batch_tokens;
  return o;
}

}  // namespace ragform::reader
