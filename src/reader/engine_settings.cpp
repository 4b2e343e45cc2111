#include "reader/engine_settings.h"

#include <vector>

#include "base/error.h"
#include "engine/ops/cpu_features.h"
#include "engine/tokenizer/chat_template.h"

namespace ragform::reader {

namespace {

// The engine's own parser of a value (ops::parse_tier, ops::parse_f16_gemm, parse_numerics: their
// names and aliases live with the engine) with its refusal named by the setting's key.
template <class F>
auto parsed(const std::string& key, F&& parse) -> decltype(parse()) {
  try {
    return parse();
  } catch (const OptionError&) {
    throw;
  } catch (const UsageError& e) {
    // what() is "<key>: <why>": the parser was given the key as its `where`.
    const std::string what = e.what();
    throw OptionError(key, what.substr(what.find(": ") + 2));
  }
}

}  // namespace

const OptionInfo& engine_setting(const std::string& key) {
  static const std::vector<OptionInfo> all = option_infos<EngineSettings>();
  for (const OptionInfo& o : all)
    if (o.decl.key == key) return o;
  throw Error("engine settings", "no setting '" + key + "'");
}

bool kv_f16(const std::string& kv) { return option_choice("kv", kv, {"f32", "f16"}) == 1; }

EngineOptions engine_options(const EngineSettings& s) {
  EngineSettings checked = s;
  check_options(checked);  // threads within 0..max_threads(): refused before any thread starts
  EngineOptions e;
  e.threads = s.threads;  // the reader's own pool of this many threads (0 = all cores)
  e.f16_gemm = parsed("f16_gemm", [&] { return ops::parse_f16_gemm(s.f16_gemm, "f16_gemm"); });
  if (s.cpu) e.cpu_tier = parsed("cpu", [&] { return ops::parse_tier(*s.cpu, "cpu"); });
  if (s.load)
    e.load = option_choice("load", *s.load, {"mmap", "memory"}) == 0 ? MappedFile::Load::map
                                                                     : MappedFile::Load::memory;
  e.numerics = parsed("numerics", [&] { return parse_numerics(s.numerics, "numerics"); });
  return e;
}

NativeOptions native_options(const EngineSettings& s, int training_context) {
  NativeOptions o;
  o.kv_f16 = kv_f16(s.kv);
  o.engine = engine_options(s);  // every range, before the rest
  o.chat = s.chat;
  o.system_prompt = s.system;
  if (!s.chat_template.empty()) tok::chat_format(s.chat_template);  // the one check of the name
  o.chat_template = s.chat_template;
  o.overflow = option_choice("truncate", s.truncate, {"error", "left"}) == 0
                   ? Overflow::Error
                   : Overflow::TruncateLeft;
  o.prefix_cache = s.prefix_cache;
  o.prefix_cache_bytes = size_t(s.prefix_cache_mb) << 20;
  o.n_ctx = s.ctx ? *s.ctx : default_context(training_context);
  return o;
}

}  // namespace ragform::reader
