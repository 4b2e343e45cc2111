// ragform serve: an OpenAI-compatible HTTP server over the native engine (server/api.h).
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <algorithm>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "base/mapped_file.h"
#include "base/memory_limit.h"
#include "cli/command.h"
#include "cli/reader_flags.h"
#include "engine/gguf/gguf.h"
#include "engine/model/bert.h"
#include "engine/model/model.h"
#include "pipelines/cnorm/cnorm.h"
#include "pipelines/spotlight/spotlight.h"
#include "reader/encoder_settings.h"
#include "reader/engine_settings.h"
#include "reader/native_encoder.h"
#include "reader/native_reader.h"
#include "server/api.h"
#include "server/api_encoder.h"
#include "server/api_retrieve.h"
#include "server/engine.h"
#include "server/http.h"
#include "server/openapi.h"
#include "server/reply_budget.h"
#include "server/router.h"
#include "store/sha256.h"

namespace ragform::cli {
namespace {

// The write end of the stop pipe: the signal handler's only state (write(2) is async-signal-safe).
int g_stop_fd = -1;

void on_stop_signal(int sig) {
  const int saved = errno;
  const unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] ssize_t n = write(g_stop_fd, &b, 1);
  errno = saved;
}

// Binds, serves until SIGTERM / SIGINT, and returns once the server has stopped. The caller blocks
// the signals in its threads (so no engine or HTTP thread is interrupted); a handler catches them
// wherever the kernel delivers them — this waiter, which unblocks them, or a thread a library
// started before the mask (OpenBLAS, under FAISS, starts its pool when it is loaded: with only
// sigwait such a thread took the default action and killed the process) — and writes the signal
// number to a pipe the waiter reads.
void serve_until_signal(server::HttpServer& http, const std::string& what, const std::string& host,
                        sigset_t sigs) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    throw Error("serve", std::string("cannot create the stop pipe: ") + std::strerror(errno));
  g_stop_fd = fds[1];
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  int bound = http.bind();
  std::fprintf(stderr, "ragform serve: %s listening on http://%s:%d\n", what.c_str(), host.c_str(),
               bound);
  std::fflush(stderr);
  std::thread waiter([&] {
    pthread_sigmask(SIG_UNBLOCK, &sigs, nullptr);
    unsigned char sig = 0;
    while (read(fds[0], &sig, 1) < 0 && errno == EINTR) {
    }
    if (sig == 0) return;  // woken by ourselves after serve() returned
    std::fprintf(stderr, "ragform serve: signal %d, stopping\n", int(sig));
    http.stop();
  });
  http.serve();
  // serve() may also return on its own (listen error): wake the waiter so it can be joined.
  const unsigned char zero = 0;
  [[maybe_unused]] ssize_t n = write(fds[1], &zero, 1);
  waiter.join();
  // The stop is under way (responses finishing, the engine draining): a second SIGTERM, as a
  // supervisor or a test harness may send, must not turn the clean exit into a kill.
  signal(SIGTERM, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  g_stop_fd = -1;
  close(fds[0]);
  close(fds[1]);
}

bool is_encoder_model(const std::string& path) {
  return model::is_encoder_file(*gguf::File::open(path));
}

// A key a client can send: HTTP trims the spaces around a header value and the Bearer scheme ends
// at the first space, so a key with whitespace or a control character could never match (and one
// of only spaces would look set while no client could use it).
const std::string& sendable_key(const std::string& where, const std::string& key) {
  for (unsigned char c : key) {
    if (c <= 0x20 || c == 0x7f)
      throw UsageError(where,
                       "the key holds whitespace or a control character, which an "
                       "'Authorization: Bearer KEY' header cannot carry");
    // A byte past ASCII (a UTF-8 byte order mark a text editor wrote, a non-ASCII letter): header
    // values are ASCII in practice and a bearer token is (RFC 6750 token68), so every client was
    // refused with nothing saying why (pass 19).
    if (c >= 0x80)
      throw UsageError(where,
                       "the key holds a byte past ASCII (a UTF-8 byte order mark at the start of "
                       "a key file, a non-ASCII letter), which a Bearer token cannot carry");
  }
  return key;
}

// The longest API key file line read.
constexpr size_t kMaxKeyFileBytes = 4096;
// What a failing request may use to unwind and answer (install_memory_reserve): the largest
// nlohmann::json tree a reply builds frees with a stack of pointers, a few MB at most.
constexpr size_t kServeMemoryReserve = size_t(16) << 20;

// The server's API key: --api-key, --api-key-file or $RAGFORM_API_KEY (at most one of the flags;
// the variable is read when neither is given). Empty = no key required: only when none of the
// three is given, since an empty key that was meant to protect the server would leave it open.
std::string api_key(const Opt<std::string>& key, const Opt<std::string>& file) {
  if (key.seen && file.seen)
    throw UsageError("--api-key-file", "give either --api-key or --api-key-file");
  if (key.seen) {
    if (key.value.empty())
      throw UsageError("--api-key", "the key is empty (omit the flag to serve without a key)");
    return sendable_key("--api-key", key.value);
  }
  if (file.seen) {
    // A bounded first line: --api-key-file /dev/zero read 2 GB before refusing.
    const std::string line = read_first_line(file.value, kMaxKeyFileBytes, "API key file");
    if (line.empty()) throw Error(file.value, "the API key file's first line is empty");
    return sendable_key(file.value, line);
  }
  if (const char* env = std::getenv("RAGFORM_API_KEY")) {
    if (*env == '\0')
      throw UsageError("RAGFORM_API_KEY", "is set but empty (unset it to serve without a key)");
    return sendable_key("RAGFORM_API_KEY", env);
  }
  return "";
}

// The flags of `ragform serve`, declared in --help order; both kinds of server read them.
struct ServeFlags {
  explicit ServeFlags(Args& args) : a(args) {}
  Args& a;
  ReaderFlags rf{a, false};  // -m: required unless --openapi
  Opt<std::string>& host = a.opt<std::string>("--host", "ADDR", "address to bind", "127.0.0.1");
  Opt<int>& port = a.opt<int>("--port", "N", "port (0 = any free port, printed on stderr)", 8080)
                       .range(0, 65535);
  Opt<std::string>& alias =
      a.opt<std::string>("--alias", "NAME", "model id (default: file name without .gguf)", "");
  Opt<std::string>& key = a.opt<std::string>(
      "--api-key", "KEY",
      "require 'Authorization: Bearer KEY'; visible to every local user in the process list "
      "(ps): prefer --api-key-file or RAGFORM_API_KEY",
      "");
  Opt<std::string>& key_file = a.opt<std::string>(
      "--api-key-file", "FILE", "read the API key from FILE (its first line)", "");
  Opt<int>& max_body = a.opt<int>("--max-body", "BYTES",
                                  "largest request body (any content type or encoding)", 1 << 20)
                           .range(1, kMaxInt);
  Opt<int>& max_conn =
      a.opt<int>("--max-connections", "N",
                 "connections served at once, a thread each (more wait their turn)", 256)
          .range(1, 65536);
  Opt<int>& read_timeout =
      a.opt<int>("--read-timeout", "S",
                 "drop a connection whose request stays silent for S seconds", 10)
          .range(1, 3600);
  Opt<int>& request_timeout =
      a.opt<int>("--request-timeout", "S",
                 "a request's line, headers and body must arrive within S seconds (else 408)", 30)
          .range(1, 3600);
  Opt<int>& max_prompt =
      a.opt<int>("--max-prompt-tokens", "N", "largest prompt (0 = the context size)", 0);
  Opt<int>& max_tokens =
      a.opt<int>("--max-tokens", "N", "largest max_tokens a request may ask for", 512);
  Opt<int>& queue =
      a.opt<int>("--queue", "N", "requests waiting for a place before 503", 64).range(1, kMaxInt);
  Opt<int>& batch =
      a.opt<int>("--batch", "N",
                 "completions generated together, sharing each forward pass (1 = one at a time)", 8)
          .range(1, kMaxInt);
  Opt<int>& pace =
      a.opt<int>(
           "--pace-ms", "MS",
           "sleep MS after each forward pass (to watch streaming on a tiny model; 0 = full speed)",
           0)
          .range(0, 10000);
  Opt<std::string>& cnorm_profile = a.opt<std::string>(
      "--cnorm-profile", "FILE",
      "C-NORM profile (cnorm calibrate) for /v1/rag/normalize requests that bring none", "");
  Opt<std::string>& vectors = a.opt<std::string>(
      "--vectors", "FILE", "word vectors JSON {word: [floats]} for /v1/rag/spotlight", "");
  Opt<std::string>& spot_enc = a.opt<std::string>(
      "--spotlight-encoder", "NAME",
      "/v1/rag/spotlight encoder: static (--vectors), hidden (the served model) or model "
      "(--encoder-model)",
      "static");
  Opt<std::string>& enc_model = a.opt<std::string>(
      "--encoder-model", "FILE", "encoder GGUF (bert) for --spotlight-encoder model", "");
  Opt<int>& spot_layer =
      a.opt<int>("--spotlight-layer", "L", "hidden-state layer for --spotlight-encoder hidden",
                 int(spotlight::EncoderOptions{}.layer));
  Opt<std::string>& index_dir = a.opt<std::string>(
      "--index", "DIR",
      "also answer POST /v1/retrieve from this retrieval index (docs/retrieval.md)", "");
  Flag& openapi = a.flag("--openapi",
                         "print the API's OpenAPI document (docs/openapi.json, with the limits "
                         "these flags set) and exit: no model is loaded");

  std::string model_id() const {
    return alias.value.empty() ? std::filesystem::path(rf.model.value).stem().string()
                               : alias.value;
  }
  // The files and folders this server reads: error replies name them by file name only.
  std::vector<std::string> server_paths() const {
    return {rf.model.value, enc_model.value, index_dir.value,
            vectors.value,  key_file.value,  cnorm_profile.value};
  }
  // The limits the API document states (GET /openapi.json, --openapi).
  server::OpenApiLimits limits() const {
    server::OpenApiLimits l = server::default_openapi_limits();
    l["max_tokens"] = max_tokens.value;
    l["queue"] = queue.value;
    l["max_body"] = max_body.value;
    return l;
  }
  server::HttpOptions http() const {
    server::HttpOptions ho;
    ho.host = host.value;
    ho.port = port.value;
    ho.max_body = size_t(max_body.value);
    ho.max_connections = max_conn.value;
    ho.read_timeout_s = read_timeout.value;
    ho.request_timeout_s = request_timeout.value;
    return ho;
  }
};

// POST /v1/retrieve when --index is given (server/api_retrieve.h); dense and hybrid when `enc`
// (from `enc_path`) is the index's encoder.
// `enc_sha256`: the encoder file's hash when already computed.
std::unique_ptr<server::RetrieveApi> open_retrieve_api(const std::string& dir, reader::Encoder* enc,
                                                       const std::string& enc_path,
                                                       const std::string& enc_sha256 = "") {
  if (dir.empty()) return nullptr;
  server::RetrieveApiOptions o;
  o.index_dir = dir;
  if (enc && !enc_path.empty()) {
    o.encoder = enc;
    o.encoder_sha256 = enc_sha256.empty() ? store::sha256_file(enc_path) : enc_sha256;
    o.encoder_name = std::filesystem::path(enc_path).filename().string();
  }
  auto api = std::make_unique<server::RetrieveApi>(o);
  std::fprintf(stderr, "ragform serve: POST /v1/retrieve from %s (bm25%s)\n", dir.c_str(),
               api->dense_available() ? ", dense, hybrid" : "");
  return api;
}

// An encoder model (bert): /v1/embeddings and /v1/rerank (server/api_encoder.h).
void serve_encoder(ServeFlags& f, const std::string& key, const sigset_t& sigs) {
  reader::NativeEncoder enc(f.rf.model.value,
                            reader::native_encoder_options({}, f.rf.native_options().engine));
  server::EncoderApiOptions eo;
  eo.model_id = f.model_id();
  eo.model_sha256 = store::sha256_file(f.rf.model.value);  // once, for /v1/models
  server::EncoderApi api(enc, eo);
  auto retr = open_retrieve_api(f.index_dir.value, &enc, f.rf.model.value, eo.model_sha256);
  server::Router router(key);
  router.hide(f.server_paths());
  router.admit(server::admit_body);
  api.add_routes(router);
  if (retr) retr->add_routes(router);
  server::add_openapi_route(router, "encoder", f.limits());
  server::HttpServer http(f.http(),
                          [&router](const server::Request& r) { return router.handle(r); });
  serve_until_signal(http, "encoder '" + eo.model_id + "'", f.host.value, sigs);
  std::fprintf(stderr, "ragform serve: stopped\n");
}

// A generative model: completions through the batching engine, scoring, attention and the RAG
// endpoints (server/api.h). profile_json: the --cnorm-profile file's text ("" = none).
void serve_model(ServeFlags& f, const std::string& key, const std::string& profile_json,
                 std::shared_ptr<const spotlight::WordVectors> wv, const sigset_t& sigs) {
  // The model file's SHA-256 for /v1/models (a fleet's weights check), hashed once while the
  // model loads (reading it also warms the page cache for the mapped weights).
  auto model_sha256 = std::async(std::launch::async,
                                 [path = f.rf.model.value] { return store::sha256_file(path); });
  auto reader = f.rf.open_native();
  int n_layer = int(reader->model().hp().n_layer);
  if (f.spot_enc.value == "hidden" && (f.spot_layer.value < 0 || f.spot_layer.value > n_layer))
    throw UsageError("serve", "--spotlight-layer must be in 0.." + std::to_string(n_layer));
  server::SchedulerOptions so;
  so.n_ctx = f.rf.ctx.value;
  so.kv_f16 = reader::kv_f16(f.rf.kv.value);  // the reader's own check (engine_settings.h)
  so.max_batch = f.batch.value;
  so.max_queue = f.queue.value;
  so.pace_ms = f.pace.value;
  server::Engine engine(*reader, so);
  server::ApiOptions ao;
  ao.model_id = f.model_id();
  ao.model_sha256 = model_sha256.get();
  ao.max_prompt_tokens = f.max_prompt.value;
  ao.max_tokens = f.max_tokens.value;
  ao.n_ctx = f.rf.ctx.value;
  ao.chat_template = f.rf.chat_template.value;  // the reader's setting: --chat's format too
  ao.cnorm_profile = profile_json;
  ao.cnorm_profile_name = f.cnorm_profile.value;
  ao.vectors = std::move(wv);
  ao.spotlight_encoder = f.spot_enc.value;
  ao.spotlight_layer = f.spot_layer.value;
  if (!f.enc_model.value.empty()) {
    // Its own pool: requests run beside the engine.
    ao.spotlight_model = std::make_shared<reader::NativeEncoder>(
        f.enc_model.value, reader::native_encoder_options({}, f.rf.native_options().engine));
  }
  server::Api api(*reader, engine, ao);
  auto retr = open_retrieve_api(f.index_dir.value, ao.spotlight_model.get(), f.enc_model.value);
  server::Router router(key);
  router.hide(f.server_paths());
  router.admit(server::admit_body);
  api.add_routes(router);
  if (retr) retr->add_routes(router);
  server::add_openapi_route(router, "reader", f.limits());
  server::HttpServer http(f.http(),
                          [&router](const server::Request& r) { return router.handle(r); });
  serve_until_signal(http, "model '" + ao.model_id + "'", f.host.value, sigs);
  engine.stop();
  auto st = engine.stats();
  std::fprintf(stderr,
               "ragform serve: stopped after %llu forward passes, %llu sequences (largest batch "
               "%d)\n",
               (unsigned long long)st.steps, (unsigned long long)st.sequences, st.largest_batch);
}

int run_serve(const std::vector<std::string>& argv) {
  Args a(
      "serve", "Serve a model over an OpenAI-compatible HTTP API.",
      "Endpoints: GET /health, GET /v1/models, POST /v1/completions, POST /v1/chat/completions,\n"
      "POST /v1/score, POST /v1/attention, POST /v1/rag/normalize (C-NORM), POST "
      "/v1/rag/spotlight\n"
      "(SpotlightRAG), POST /v1/rag/present (a tune profile) (docs/server.md). An encoder model\n"
      "(bert: embeddings, rerankers) answers POST /v1/embeddings and POST /v1/rerank instead\n"
      "(docs/encoders.md). With --index DIR either kind answers POST /v1/retrieve. Most routes\n"
      "also answer without /v1 (GET /openapi.json lists each). Up to --batch completions share\n"
      "every forward pass, a new request joining at the next token; stream: true sends tokens as "
      "they are generated. Stops\n"
      "cleanly on SIGTERM / SIGINT. The API key may also come from the environment variable\n"
      "RAGFORM_API_KEY (when neither --api-key nor --api-key-file is given). GET /openapi.json\n"
      "describes the server's routes (OpenAPI 3.1); --openapi prints the document of both kinds\n"
      "of server.");
  ServeFlags f(a);
  f.rf.template_without_chat = true;  // --chat-template: /v1/chat/completions' format too
  if (!a.parse(argv)) return 0;
  if (f.openapi.value) {
    std::fputs(server::serve_openapi_text(f.limits()).c_str(), stdout);
    return 0;
  }
  if (!f.rf.model.seen) throw UsageError("serve", "missing required option --model");
  const std::string key_value =
      api_key(f.key, f.key_file);  // before the model: a bad file fails fast
  if (f.spot_enc.value != "static" && f.spot_enc.value != "hidden" && f.spot_enc.value != "model")
    throw UsageError("serve", "--spotlight-encoder must be static, hidden or model, got '" +
                                  f.spot_enc.value + "'");
  if ((f.spot_enc.value == "model") != !f.enc_model.value.empty())
    throw UsageError("serve", "--spotlight-encoder model and --encoder-model FILE go together");
  // Loaded before the model, so a bad file fails fast.
  std::string profile_json;
  if (!f.cnorm_profile.value.empty()) {
    cnorm::load_profile(f.cnorm_profile.value);  // validates, naming the file and the field
    // (load_profile read at most kMaxTextFileBytes of it; the text is read again the same way.)
    profile_json = read_file_bytes(f.cnorm_profile.value, kMaxTextFileBytes, "C-NORM profile");
  }
  std::shared_ptr<const spotlight::WordVectors> wv;
  if (!f.vectors.value.empty())
    wv = std::make_shared<const spotlight::WordVectors>(
        spotlight::WordVectors::load(f.vectors.value));

  // Room to fail well: a request whose allocation fails unwinds through destructors that allocate
  // (nlohmann::json's), and a throw there ended the server (issue 40, fourth pass: 12 concurrent
  // spotlight requests under `ulimit -v 2000000`). The reserve gives them room; the request fails
  // with 503 out_of_memory and the server goes on.
  install_memory_reserve(kServeMemoryReserve);
  // glibc gives each thread that allocates at once an arena of its own, up to 8 per core, and
  // each reserves 64 MB of address space: under `ulimit -v 2000000` 37 threads held 3.9 GB of
  // address space with 680 MB resident, and 12 concurrent spotlight requests ended the server
  // (issue 40, fourth pass). Two arenas per core (MALLOC_ARENA_MAX, when set, is the user's
  // choice) kept that server at 790 MB and answered all 12, three times over.
  if (!std::getenv("MALLOC_ARENA_MAX"))
    mallopt(M_ARENA_MAX, std::max(2, 2 * int(std::thread::hardware_concurrency())));
  // Block the stop signals in our threads; serve_until_signal catches them (see there).
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  if (is_encoder_model(f.rf.model.value))
    serve_encoder(f, key_value, sigs);
  else
    serve_model(f, key_value, profile_json, std::move(wv), sigs);
  return 0;
}

RAGFORM_COMMAND("serve", "OpenAI-compatible HTTP server over the native engine", run_serve, 60);

}  // namespace
}  // namespace ragform::cli
