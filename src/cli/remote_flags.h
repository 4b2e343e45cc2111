// Flags that choose the Reader behind a command: the native engine or an OpenAI-compatible server.
//   --reader native|openai   (default native)
//   --base-url URL           server base URL, e.g. http://127.0.0.1:8080/v1 (openai)
//   --api-key-env VAR        environment variable holding the API key (default OPENAI_API_KEY)
//   --concurrency N          requests in flight (openai)
//   --retries N, --timeout S
// With --reader openai, -m/--model (from ReaderFlags) is the server's model name, --chat selects
// /v1/chat/completions and --system the system turn.
#pragma once
#include <memory>

#include "cli/reader_flags.h"
#include "reader/reader.h"

namespace ragform::cli {

struct RemoteFlags {
  explicit RemoteFlags(Args& a);
  Opt<std::string>& reader;
  Opt<std::string>& base_url;
  Opt<std::string>& api_key_env;
  Opt<int>& concurrency;
  Opt<int>& retries;
  Opt<int>& timeout;
  // UsageError for an unknown --reader or a missing --base-url (before any input is read).
  void check() const;
  // The reader these flags and `rf` describe; check() first.
  std::unique_ptr<reader::Reader> open(const ReaderFlags& rf) const;
};

}  // namespace ragform::cli
