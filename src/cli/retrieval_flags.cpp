#include "cli/retrieval_flags.h"

#include "cli/engine_env.h"
#include "reader/encoder_settings.h"

namespace ragform::cli {

IndexEncoder open_index_encoder(const std::string& model_path, int threads) {
  IndexEncoder e;
  e.encoder = std::make_unique<reader::NativeEncoder>(
      model_path, reader::native_encoder_options({}, engine_options_from_env(threads)));
  e.id = retrieval::encoder_id(model_path);
  return e;
}

}  // namespace ragform::cli
