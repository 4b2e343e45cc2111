#include "cli/retrieval_flags.h"

#include "cli/engine_env.h"

namespace ragform::cli {

IndexEncoder open_index_encoder(const std::string& model_path, int threads) {
  IndexEncoder e;
  reader::NativeEncoderOptions o;
  o.engine = engine_options_from_env(threads);
  o.truncate = runtime::Truncate::Right;
  e.encoder = std::make_unique<reader::NativeEncoder>(model_path, o);
  e.id = retrieval::encoder_id(model_path);
  return e;
}

}  // namespace ragform::cli
