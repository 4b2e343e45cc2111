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
    // The byte size must be exactly what the shape and type imply (no wrap-around).
    const gguf::TypeInfo& ti = gguf::type_info(t.type);
    const uint64_t blocks = uint64_t(t.n_elements()) / uint64_t(ti.block_size);
    if (blocks > UINT64_MAX / uint64_t(ti.type_size)) __builtin_trap();  // n_bytes wrapped
    if (blocks * uint64_t(ti.type_size) != t.n_bytes) __builtin_trap();
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
