// SureSetup and read_shard (sure_verbs.h): the flags and inputs the `ragform sure` verbs share
// (a cmd_ file: it is built with the executable, which knows the source tree's prompt directory).
#include "base/error.h"
#include "base/paths.h"
#include "cli/sure_verbs.h"
#include "reader/native_reader.h"
#include "store/sha256.h"

namespace ragform::cli {

std::vector<sure::Pair> read_shard(const std::string& path, const Shard& shard,
                                   std::string* whole_sha256) {
  std::vector<sure::Pair> pairs = sure::read_pairs(path);
  // An empty input is an error (exit 1), as for every other command that reads records; an empty
  // shard of a non-empty input is not.
  if (pairs.empty()) throw Error(path == "-" ? "stdin" : path, "empty input: no pairs");
  if (whole_sha256) *whole_sha256 = sure::pairs_sha256(pairs);
  std::erase_if(pairs, [&](const sure::Pair& p) { return !shard.keeps(p.instance); });
  return pairs;
}

Opt<std::string>& pairs_input_flag(Args& a) {
  return a.opt<std::string>("--input", "FILE", "pairs JSONL ('-' = stdin)", "-");
}

OtherReaderFlags::OtherReaderFlags(Args& a, const std::string& role, const std::string& model_help)
    : model(a.opt<std::string>("--" + role + "-model", "MODEL", model_help, "")),
      base_url(a.opt<std::string>(
          "--" + role + "-base-url", "URL",
          "server of --" + role + "-model with --reader openai (default: --base-url)", "")) {}

SureSetup::SureSetup(Args& a)
    : rf(a, false),
      xf(a),
      prompts_dir(
          a.opt<std::string>("--prompts", "DIR",
                             "prompt directory (default: <bin>/../share/ragform/prompts/sure "
                             "of an installed binary, else the source tree's prompts/sure)",
                             "")) {}

void SureSetup::require(const std::string& verb) const {
  if (!given())
    throw UsageError(verb, "needs a reader: -m MODEL.gguf, or --reader openai --base-url URL");
  xf.check();
}

std::unique_ptr<reader::Reader> SureSetup::open(const std::string& verb) const {
  require(verb);
  return xf.open(rf);
}

std::unique_ptr<reader::Reader> SureSetup::open_other(const std::string& model,
                                                      const std::string& url) const {
  if (!remote()) {
    if (xf.reader.value != "native")
      throw UsageError("--reader", "'" + xf.reader.value + "' is not native or openai");
    return std::make_unique<reader::NativeReader>(model, rf.native_options());
  }
  return xf.open_other(rf, model, url);
}

sure::PromptSet SureSetup::prompts() const {
  return sure::load_prompts(prompts_dir.value.empty()
                                ? find_data_dir("prompts/sure", RAGFORM_SOURCE_PROMPTS)
                                : prompts_dir.value);
}

std::string SureSetup::model_sha256() const {
  return remote() ? std::string() : store::sha256_file(rf.model.value);
}

common::RunOrigin SureSetup::origin(const reader::Reader& r) const { return common::origin_for(r); }

}  // namespace ragform::cli
