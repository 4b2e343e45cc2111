// Standard base64 (RFC 4648 section 4, with '=' padding), encoding only: the OpenAI embeddings
// API's `encoding_format: "base64"` is a vector's float32 bytes, little-endian, in this form (the
// official SDKs ask for it by default and decode it themselves).
#pragma once
#include <string>
#include <string_view>

namespace ragform {

std::string base64_encode(std::string_view bytes);

}  // namespace ragform
