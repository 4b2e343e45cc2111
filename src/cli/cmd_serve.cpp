// ragform serve: an OpenAI-compatible HTTP server over the native engine (server/api.h).
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "cli/command.h"
#include "cli/reader_flags.h"
#include "engine/gguf/gguf.h"
#include "engine/model/bert.h"
#include "engine/model/model.h"
#include "pipelines/cnorm/calibrate.h"
#include "pipelines/spotlight/encoder.h"
#include "reader/native_encoder.h"
#include "reader/native_reader.h"
#include "server/api.h"
#include "server/api_encoder.h"
#include "server/engine.h"
#include "server/http.h"

namespace ragform::cli {
namespace {

// Binds, serves until SIGTERM / SIGINT (blocked in every thread by the caller, waited for here by
// one thread with sigwait), and returns once the server has stopped.
void serve_until_signal(server::HttpServer& http, const std::string& what, const std::string& host,
                        sigset_t sigs) {
  int bound = http.bind();
  std::fprintf(stderr, "ragform serve: %s listening on http://%s:%d\n", what.c_str(), host.c_str(),
               bound);
  std::fflush(stderr);
  std::atomic<bool> served{false};
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&sigs, &sig);
    if (served) return;  // woken by ourselves after serve() returned
    std::fprintf(stderr, "ragform serve: signal %d, stopping\n", sig);
    http.stop();
  });
  http.serve();
  // serve() may also return on its own (listen error): wake the waiter so it can be joined.
  served = true;
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
}

bool is_encoder_model(const std::string& path) {
  return model::is_encoder_file(*gguf::File::open(path));
}

// The server's API key: --api-key, --api-key-file or $RAGFORM_API_KEY (at most one of the flags;
// the variable is read when neither is given). Empty = no key required.
std::string api_key(const Opt<std::string>& key, const Opt<std::string>& file) {
  if (key.seen && file.seen)
    throw UsageError("--api-key-file", "give either --api-key or --api-key-file");
  if (key.seen) return key.value;
  if (file.seen) {
    std::ifstream in(file.value, std::ios::binary);
    if (!in)
      throw Error(file.value, std::string("cannot read the API key file: ") + std::strerror(errno));
    std::string line;
    std::getline(in, line);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) throw Error(file.value, "the API key file's first line is empty");
    return line;
  }
  if (const char* env = std::getenv("RAGFORM_API_KEY")) return env;
  return "";
}

int run_serve(const std::vector<std::string>& argv) {
  Args a(
      "serve", "Serve a model over an OpenAI-compatible HTTP API.",
      "Endpoints: GET /health, GET /v1/models, POST /v1/completions, POST /v1/chat/completions,\n"
      "POST /v1/score, POST /v1/attention, POST /v1/rag/normalize (C-NORM), POST "
      "/v1/rag/spotlight\n"
      "(SpotlightRAG) (docs/server.md). An encoder model (bert: embeddings, rerankers) answers\n"
      "POST /v1/embeddings and POST /v1/rerank instead (docs/encoders.md). Up to --batch "
      "completions share every forward pass, a new\n"
      "request joining at the next token; stream: true sends tokens as they are generated. Stops\n"
      "cleanly on SIGTERM / SIGINT. The API key may also come from the environment variable\n"
      "RAGFORM_API_KEY (when neither --api-key nor --api-key-file is given).");
  ReaderFlags rf(a);
  auto& host = a.opt<std::string>("--host", "ADDR", "address to bind", "127.0.0.1");
  auto& port = a.opt<int>("--port", "N", "port (0 = any free port, printed on stderr)", 8080)
                   .range(0, 65535);
  auto& alias =
      a.opt<std::string>("--alias", "NAME", "model id (default: file name without .gguf)", "");
  auto& key = a.opt<std::string>(
      "--api-key", "KEY",
      "require 'Authorization: Bearer KEY'; visible to every local user in the process list "
      "(ps): prefer --api-key-file or RAGFORM_API_KEY",
      "");
  auto& key_file = a.opt<std::string>("--api-key-file", "FILE",
                                      "read the API key from FILE (its first line)", "");
  auto& max_body =
      a.opt<int>("--max-body", "BYTES", "largest request body", 1 << 20).range(1, kMaxInt);
  auto& max_prompt =
      a.opt<int>("--max-prompt-tokens", "N", "largest prompt (0 = the context size)", 0);
  auto& max_tokens =
      a.opt<int>("--max-tokens", "N", "largest max_tokens a request may ask for", 512);
  auto& queue =
      a.opt<int>("--queue", "N", "requests waiting for a place before 503", 64).range(1, kMaxInt);
  auto& batch =
      a.opt<int>("--batch", "N",
                 "completions generated together, sharing each forward pass (1 = one at a time)", 8)
          .range(1, kMaxInt);
  auto& pace =
      a.opt<int>(
           "--pace-ms", "MS",
           "sleep MS after each forward pass (to watch streaming on a tiny model; 0 = full speed)",
           0)
          .range(0, 10000);
  auto& tmpl = a.opt<std::string>(
      "--chat-template", "NAME",
      "chat format for /v1/chat/completions (chatml, llama3, ...; default: the model's)", "");
  auto& cnorm_profile = a.opt<std::string>(
      "--cnorm-profile", "FILE",
      "C-NORM profile (cnorm calibrate) for /v1/rag/normalize requests that bring none", "");
  auto& vectors = a.opt<std::string>(
      "--vectors", "FILE", "word vectors JSON {word: [floats]} for /v1/rag/spotlight", "");
  auto& spot_enc = a.opt<std::string>(
      "--spotlight-encoder", "NAME",
      "/v1/rag/spotlight encoder: static (--vectors), hidden (the served model) or model "
      "(--encoder-model)",
      "static");
  auto& enc_model = a.opt<std::string>("--encoder-model", "FILE",
                                       "encoder GGUF (bert) for --spotlight-encoder model", "");
  auto& spot_layer =
      a.opt<int>("--spotlight-layer", "L", "hidden-state layer for --spotlight-encoder hidden", 1);
  if (!a.parse(argv)) return 0;
  const std::string key_value = api_key(key, key_file);  // before the model: a bad file fails fast
  if (spot_enc.value != "static" && spot_enc.value != "hidden" && spot_enc.value != "model")
    throw UsageError("serve", "--spotlight-encoder must be static, hidden or model, got '" +
                                  spot_enc.value + "'");
  if ((spot_enc.value == "model") != !enc_model.value.empty())
    throw UsageError("serve", "--spotlight-encoder model and --encoder-model FILE go together");
  // Loaded before the model, so a bad file fails fast.
  std::string profile_json;
  if (!cnorm_profile.value.empty()) {
    cnorm::load_profile(cnorm_profile.value);  // validates, naming the file and the field
    std::ifstream in(cnorm_profile.value, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    profile_json = ss.str();
  }
  std::shared_ptr<const spotlight::WordVectors> wv;
  if (!vectors.value.empty())
    wv =
        std::make_shared<const spotlight::WordVectors>(spotlight::WordVectors::load(vectors.value));

  // Block the stop signals in every thread; one thread waits for them with sigwait.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  if (is_encoder_model(rf.model.value)) {
    // An encoder model (bert): /v1/embeddings and /v1/rerank (server/api_encoder.h).
    reader::NativeEncoderOptions no;
    no.engine = rf.native_options().engine;
    reader::NativeEncoder enc(rf.model.value, no);
    server::EncoderApiOptions eo;
    eo.model_id =
        alias.value.empty() ? std::filesystem::path(rf.model.value).stem().string() : alias.value;
    eo.api_key = key_value;
    server::EncoderApi api(enc, eo);
    server::HttpOptions ho;
    ho.host = host.value;
    ho.port = port.value;
    ho.max_body = size_t(max_body.value);
    ho.threads = std::max(16, queue.value + 4);
    server::HttpServer http(ho, [&api](const server::Request& r) { return api.handle(r); });
    serve_until_signal(http, "encoder '" + eo.model_id + "'", host.value, sigs);
    std::fprintf(stderr, "ragform serve: stopped\n");
    return 0;
  }
  auto reader = rf.open_native();
  int n_layer = int(reader->model().hp().n_layer);
  if (spot_enc.value == "hidden" && (spot_layer.value < 0 || spot_layer.value > n_layer))
    throw UsageError("serve", "--spotlight-layer must be in 0.." + std::to_string(n_layer));
  server::EngineOptions eo;
  eo.n_ctx = rf.ctx.value;
  eo.kv_f16 = rf.kv.value == "f16";
  eo.max_batch = batch.value;
  eo.max_queue = queue.value;
  eo.pace_ms = pace.value;
  server::Engine engine(*reader, eo);
  server::ApiOptions ao;
  ao.model_id =
      alias.value.empty() ? std::filesystem::path(rf.model.value).stem().string() : alias.value;
  ao.api_key = key_value;
  ao.max_prompt_tokens = max_prompt.value;
  ao.max_tokens = max_tokens.value;
  ao.n_ctx = rf.ctx.value;
  ao.chat_template = tmpl.value;
  ao.cnorm_profile = profile_json;
  ao.cnorm_profile_name = cnorm_profile.value;
  ao.vectors = wv;
  ao.spotlight_encoder = spot_enc.value;
  ao.spotlight_layer = spot_layer.value;
  if (!enc_model.value.empty()) {
    reader::NativeEncoderOptions no;
    no.engine = rf.native_options().engine;  // its own pool: requests run beside the engine
    ao.spotlight_model = std::make_shared<reader::NativeEncoder>(enc_model.value, no);
  }
  server::Api api(*reader, engine, ao);
  server::HttpOptions ho;
  ho.host = host.value;
  ho.port = port.value;
  ho.max_body = size_t(max_body.value);
  ho.threads = std::max(16, queue.value + 4);
  server::HttpServer http(ho, [&api](const server::Request& r) { return api.handle(r); });
  serve_until_signal(http, "model '" + ao.model_id + "'", host.value, sigs);
  engine.stop();
  auto st = engine.stats();
  std::fprintf(stderr,
               "ragform serve: stopped after %llu forward passes, %llu sequences (largest batch "
               "%d)\n",
               (unsigned long long)st.steps, (unsigned long long)st.sequences, st.largest_batch);
  return 0;
}

RAGFORM_COMMAND("serve", "OpenAI-compatible HTTP server over the native engine", run_serve, 60);

}  // namespace
}  // namespace ragform::cli
