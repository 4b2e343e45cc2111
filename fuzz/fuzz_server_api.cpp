// libFuzzer target for the request bodies of `ragform serve` (server/api.h), without sockets:
// Api::handle takes a method, a path and a body, as the HTTP layer hands them over. The first
// input byte picks the endpoint and one of two servers, the rest is the body. The endpoints are
// every route of the API's own table (server/endpoints.h api_endpoints), never a list of this
// file's: a route added to the table is fuzzed with no edit here. The byte's low 7 bits index
// them (modulo their number; the table's order, so an appended route leaves the seeds' bytes
// meaning what they meant), its high bit picks the server:
//   server A: stories260K, word vectors for /v1/rag/spotlight (static encoder), a
//             --cnorm-profile, chatml;
//   server B: a Qwen2 fixture that adds no BOS, the model's hidden states for /v1/rag/spotlight,
//             no profile, the llama3 template.
// Both have a small context and max_tokens, so generation is cheap.
// Checked on every input: the handler answers (never throws, never hangs); a refusal is a 4xx
// with an OpenAI error object, never a 500 (a 500 means an exception other than ragform::Error
// escaped the request's validation); every body, and every event of a stream, is valid JSON.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipelines/spotlight/encoder.h"
#include "reader/native_reader.h"
#include "server/api.h"
#include "server/endpoints.h"
#include "server/engine.h"

namespace {

using namespace ragform;

// A valid C-NORM profile, as `ragform cnorm calibrate` writes one (the server's default profile).
const char* const kProfile = R"({"model_sha256": "0", "task": "qa", "p": 0.5, "seed": 7, "S": 2,
  "best": "-", "candidates": [{"delimiter": "-", "abs_mean": 0.5, "abs_std": 0.1},
  {"delimiter": "none", "abs_mean": 0.4, "abs_std": 0.1}], "config": {}})";

// One served model: its reader, engine and API.
struct Served {
  std::unique_ptr<reader::NativeReader> reader;
  std::unique_ptr<server::Engine> engine;
  std::unique_ptr<server::Api> api;

  Served(const std::string& model, server::ApiOptions ao) {
    reader::NativeOptions ro;
    ro.n_ctx = 128;
    ro.engine.threads = 1;
    reader = std::make_unique<reader::NativeReader>(model, ro);
    server::SchedulerOptions eo;
    eo.n_ctx = 128;
    eo.max_batch = 2;
    engine = std::make_unique<server::Engine>(*reader, eo);
    ao.max_tokens = 4;
    ao.n_ctx = 128;
    api = std::make_unique<server::Api>(*reader, *engine, std::move(ao));
  }
};

// Server A: stories260K (BOS added), word vectors, a default profile, chatml. Server B: a Qwen2
// model without BOS (an empty prompt is zero tokens), hidden-state spotlight, llama3 template.
struct Servers {
  std::unique_ptr<Served> a, b;

  Servers() {
    const std::string shared = RAGFORM_SHARED_DIR_FUZZ;
    server::ApiOptions oa;
    oa.model_id = "stories260K";
    oa.chat_template = "chatml";
    oa.cnorm_profile = kProfile;
    oa.cnorm_profile_name = "fuzz-profile.json";
    oa.vectors = std::make_shared<const spotlight::WordVectors>(
        spotlight::WordVectors::load(shared + "/data/embeddings/glove-50d-5k.json"));
    a = std::make_unique<Served>(shared + "/fixtures/models/stories260K.gguf", oa);
    server::ApiOptions ob;
    ob.model_id = "tiny-qwen2";
    ob.chat_template = "llama3";
    ob.spotlight_encoder = "hidden";
    ob.spotlight_layer = 1;
    b = std::make_unique<Served>(shared + "/fixtures/models/tiny-qwen2.gguf", ob);
  }
};

void check_json(const std::string& s) {
  if (!nlohmann::json::accept(s)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Servers servers;
  static const std::vector<server::Endpoint> targets = server::api_endpoints();
  if (size == 0 || targets.empty()) return 0;
  const server::Endpoint& target = targets[(data[0] & 0x7f) % targets.size()];
  server::Request req;
  req.method = target.method;
  req.path = target.path;
  req.body.assign(reinterpret_cast<const char*>(data) + 1, size - 1);
  server::Api& api = data[0] & 0x80 ? *servers.b->api : *servers.a->api;
  server::Response r = api.handle(req);
  if (r.status == 500) __builtin_trap();  // a bad request must be a 4xx
  if (r.status != 200) {
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (!j.is_object() || !j.contains("error") || !j["error"].contains("message")) __builtin_trap();
    return 0;
  }
  if (!r.stream) {
    check_json(r.body);
    return 0;
  }
  if (!r.producer) __builtin_trap();
  bool done = false;
  r.producer([&](const std::string& event) {
    if (event == "[DONE]") {
      done = true;
    } else {
      check_json(event);
      if (nlohmann::json::parse(event).contains("error")) __builtin_trap();
    }
    return true;
  });
  if (!done) __builtin_trap();
  return 0;
}
