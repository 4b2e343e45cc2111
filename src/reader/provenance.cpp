#include "reader/provenance.h"

#include "reader/openai_reader.h"

namespace ragform::reader {

nlohmann::json servers_meta(const Reader& r) {
  const auto* remote = dynamic_cast<const OpenAIReader*>(&r);
  if (!remote) return nullptr;
  const std::vector<std::string> urls = remote->servers();
  const std::vector<int64_t> answered = remote->answered();
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < urls.size(); ++i)
    out.push_back({{"url", urls[i]}, {"answered", answered[i]}});
  return out;
}

}  // namespace ragform::reader
