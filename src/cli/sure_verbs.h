// The `ragform sure` verbs (cmd_sure.cpp dispatches them) and the set-up the reader-using ones
// share: flags and files in, the pipeline's calls (pipelines/sure/sure.h), results out.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/reader_flags.h"
#include "cli/remote_flags.h"
#include "cli/shard.h"
#include "pipelines/common/common.h"
#include "pipelines/sure/sure.h"

namespace ragform::cli {

// The pairs of `path` whose instance (QA record id) is in `shard`: all documents and perturbations
// of one question go to the same worker, so its closed-book row is computed once. `whole_sha256`
// (when given) receives the identity of the whole input (pairs_sha256), shared by every shard.
std::vector<sure::Pair> read_shard(const std::string& path, const Shard& shard,
                                   std::string* whole_sha256 = nullptr);

// The set-up every reader-using verb shares: the reader under test from -m and the native flags
// (ReaderFlags) or from --reader openai --base-url URL [-m NAME] (RemoteFlags), a second reader of
// the same kind (perturber, judge), and the prompt directory.
struct SureSetup {
  explicit SureSetup(Args& a);
  ReaderFlags rf;
  RemoteFlags xf;
  Opt<std::string>& prompts_dir;

  bool remote() const { return xf.reader.value == "openai"; }
  // A reader under test was given: -m FILE (native), or --reader openai (-m names the served model,
  // and may be left out for the server's own).
  bool given() const { return remote() || !rf.model.value.empty(); }
  // UsageError unless a reader under test was given (call right after parsing, before any input
  // is read).
  void require(const std::string& verb) const;
  std::unique_ptr<reader::Reader> open(const std::string& verb) const;
  // A second reader of the same kind: native -> the GGUF file `model` with the same engine flags;
  // openai -> the served model `model` at `url` (default: --base-url) with the same HTTP flags.
  std::unique_ptr<reader::Reader> open_other(const std::string& model,
                                             const std::string& url) const;
  sure::PromptSet prompts() const;
  // The model file's hash for the run store; a remote reader names a served model, not a file.
  std::string model_sha256() const;
  // The origin of a run made by `r`, the reader under test (pipelines/common/run.h).
  common::RunOrigin origin(const reader::Reader& r) const;
};

// The flags several verbs declare alike, declared once (--batch is each verb's declaration's):
// --input FILE of the verbs that read pairs (filter, eval), '-' = stdin.
Opt<std::string>& pairs_input_flag(Args& a);

// --<role>-model MODEL and --<role>-base-url URL: a second reader beside the reader under test
// (perturb's perturber, eval's judge), of the same kind (SureSetup::open_other).
struct OtherReaderFlags {
  OtherReaderFlags(Args& a, const std::string& role, const std::string& model_help);
  Opt<std::string>& model;
  Opt<std::string>& base_url;
  bool given() const { return !model.value.empty(); }
  std::unique_ptr<reader::Reader> open(const SureSetup& su) const {
    return su.open_other(model.value, base_url.value);
  }
};

// The note of a kind `sure perturb` leaves out because its reader was not given.
std::string perturb_skip_note(sure::Kind k);

// The verbs of stored `sure eval` runs (cmd_sure_runs.cpp).
int run_sure_sig(const std::vector<std::string>& argv);
int run_sure_export(const std::vector<std::string>& argv);
int run_sure_attention(const std::vector<std::string>& argv);

}  // namespace ragform::cli
