// libFuzzer target for the GGUF reader (engine/gguf/gguf.h): any byte string either parses or
// throws ragform::Error; a parsed file must let us read every metadata value and the first and
// last byte of every tensor (so ASan catches a tensor pointer past the image), and the model
// card must either summarise it or throw ragform::Error.
#include <cstddef>
#include <cstdint>

#include "base/error.h"
#include "engine/gguf/gguf.h"
#include "engine/model/model_card.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ragform;
  std::unique_ptr<gguf::File> f;
  try {
    f = gguf::File::parse(data, size, "fuzz.gguf");
  } catch (const Error&) {
    return 0;
  }
  volatile size_t sink = 0;
  for (const auto& [key, value] : f->metadata())
    sink = sink + key.size() + value.to_display().size();
  for (const auto& t : f->tensors()) {
    if (t.n_bytes == 0) continue;
    sink = sink + t.data[0] + t.data[t.n_bytes - 1];
  }
  try {
    model::ModelCard card = model::summarize(*f);
    sink =
        sink + model::to_text(card).size() +
        model::to_json(card).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).size();
  } catch (const Error&) {
  }
  (void)sink;
  return 0;
}
