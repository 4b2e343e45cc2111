// Flags that choose the Reader behind a command: the native engine or an OpenAI-compatible server.
//   --reader native|openai   (default native)
//   --base-url URL           server base URL, e.g. http://127.0.0.1:8080/v1 (openai); several
//                            servers of one model: repeat the flag or give a comma list (one
//                            reader over all of them, reader/server_pool.h)
//   --api-key-env VAR        environment variable holding the API key (api_key_from_env)
//   --concurrency N          requests in flight per server (openai)
//   --retries N, --timeout S
// With --reader openai, -m/--model (from ReaderFlags) is the server's model name, --chat selects
// /v1/chat/completions and --system the system turn.
#pragma once
#include <memory>

#include "cli/reader_flags.h"
#include "reader/reader.h"

namespace ragform::cli {

// --api-key-env VAR: declared by every command that talks to a server (RemoteFlags for readers,
// EncoderFlags for encoders), so all of them take a key the same way.
Opt<std::string>& api_key_env_flag(Args& a);
// The key the flag names: $VAR when --api-key-env VAR was given; otherwise $OPENAI_API_KEY, else
// $RAGFORM_API_KEY (the variable `ragform serve` reads its key from, so a client and a server on
// one machine share it). "" when none is set: no Authorization header is sent. Never a flag value,
// which every local user could read in the process list.
std::string api_key_from_env(const Opt<std::string>& api_key_env);

struct RemoteFlags {
  explicit RemoteFlags(Args& a);
  Opt<std::string>& reader;
  Opt<std::vector<std::string>>& base_url;
  Opt<std::string>& api_key_env;
  Opt<int>& concurrency;
  Opt<int>& retries;
  Opt<int>& timeout;
  // Every --base-url as one comma list ("" when none was given).
  std::string base_urls() const;
  // UsageError for an unknown --reader or a missing --base-url (before any input is read).
  void check() const;
  // The reader these flags and `rf` describe; check() first. With --reader openai a flag of the
  // native engine (--kv, --truncate, --prefix-cache, --prefix-cache-mb, --f16-gemm,
  // --chat-template, and --ctx unless `ctx_caps_prompts`: tune and reproduce fit prompts to it)
  // is a usage error: the server's own setting holds, and the numbers would be those of a call
  // that ignored it (pass 23: score --ctx 10 --truncate left gave the untruncated sum).
  std::unique_ptr<reader::Reader> open(const ReaderFlags& rf, bool ctx_caps_prompts = false) const;
  // A second served reader with the same HTTP, key and chat settings: the model `model` at `url`
  // (default: --base-url), e.g. a judge or a perturber beside the reader under test.
  std::unique_ptr<reader::Reader> open_other(const ReaderFlags& rf, const std::string& model,
                                             const std::string& url) const;
};

}  // namespace ragform::cli
