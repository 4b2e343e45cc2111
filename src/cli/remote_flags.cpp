#include "cli/remote_flags.h"

#include <cstdlib>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/options.h"
#include "reader/openai_reader.h"

namespace ragform::cli {

namespace {

// A setting of the openai reader as reader/openai_reader.h declares it (help, default, range).
Opt<int>& openai_flag(Args& a, const std::string& key) {
  for (const OptionInfo& o : option_infos<reader::OpenAIOptions>())
    if (o.decl.key == key) {
      const OptionDecl& d = o.decl;
      return a.opt<int>(d.flag, d.metavar, d.help, std::stoi(o.default_text))
          .range(int(d.lo), d.hi >= double(kMaxInt) ? kMaxInt : int(d.hi), range_words(d));
    }
  throw Error("openai reader settings", "no declared setting '" + key + "'");
}

}  // namespace

Opt<std::string>& api_key_env_flag(Args& a) {
  return a.opt<std::string>(
      "--api-key-env", "VAR",
      "environment variable holding the server's API key (without this flag: RAGFORM_API_KEY "
      "when OPENAI_API_KEY is unset)",
      "OPENAI_API_KEY");
}

std::string api_key_from_env(const Opt<std::string>& api_key_env) {
  auto get = [](const std::string& var) {
    const char* v = std::getenv(var.c_str());
    return v ? std::string(v) : std::string();
  };
  if (api_key_env.seen) return get(api_key_env.value);
  std::string key = get("OPENAI_API_KEY");
  return key.empty() ? get("RAGFORM_API_KEY") : key;
}

RemoteFlags::RemoteFlags(Args& a)
    : reader(a.opt<std::string>("--reader", "KIND", "native (GGUF engine) or openai (HTTP server)",
                                "native")),
      base_url(a.opt<std::vector<std::string>>(
          "--base-url", "URL",
          "OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1; several servers of the same "
          "model: repeat the flag or give a comma list (each request goes to the least busy, a "
          "failed one to another; one run whatever the servers)")),
      api_key_env(api_key_env_flag(a)),
      concurrency(openai_flag(a, "concurrency")),
      retries(openai_flag(a, "retries")),
      timeout(openai_flag(a, "timeout")) {}

std::string RemoteFlags::base_urls() const {
  std::string list;
  for (const std::string& u : base_url.value) list += (list.empty() ? "" : ",") + u;
  return list;
}

void RemoteFlags::check() const {
  if (reader.value != "native" && reader.value != "openai")
    throw UsageError("--reader", "'" + reader.value + "' is not native or openai");
  if (reader.value == "openai" && reader::split_url_list(base_urls()).empty())
    throw UsageError("--base-url", "--reader openai needs --base-url URL");
}

std::unique_ptr<reader::Reader> RemoteFlags::open(const ReaderFlags& rf,
                                                  bool ctx_caps_prompts) const {
  check();
  if (reader.value == "native") return rf.open_native();
  rf.check_chat_flags();
  const std::vector<std::pair<bool, const char*>> native_only = {
      {rf.kv.seen, "--kv"},
      {rf.truncate.seen, "--truncate"},
      {rf.prefix_cache.seen, "--prefix-cache"},
      {rf.prefix_cache_mb.seen, "--prefix-cache-mb"},
      {rf.f16_gemm.seen, "--f16-gemm"},
      {rf.chat_template.seen, "--chat-template"},
      {rf.ctx.seen && !ctx_caps_prompts, "--ctx"}};
  for (const auto& [seen, flag] : native_only)
    if (seen)
      throw UsageError(flag,
                       "sets the native engine; with --reader openai the server's own "
                       "setting holds (start `ragform serve` with it)");
  return open_other(rf, rf.model.value, base_urls());
}

std::unique_ptr<reader::Reader> RemoteFlags::open_other(const ReaderFlags& rf,
                                                        const std::string& model,
                                                        const std::string& url) const {
  reader::OpenAIOptions o;
  o.base_url = url.empty() ? base_urls() : url;
  if (o.base_url.empty()) throw UsageError("--base-url", "--reader openai needs --base-url URL");
  o.model = model;
  o.api_key = api_key_from_env(api_key_env);
  o.chat = rf.chat.value;
  o.system_prompt = rf.system.value;
  o.concurrency = concurrency.value;
  o.retries = retries.value;
  o.timeout_s = timeout.value;
  return std::make_unique<reader::OpenAIReader>(o);
}

}  // namespace ragform::cli
