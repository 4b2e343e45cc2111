// ragform score: per-token log-probabilities of a continuation (SURE's oracle score).
#include <cstdio>

#include "base/mapped_file.h"
#include "cli/command.h"
#include "cli/json_out.h"
#include "cli/reader_flags.h"
#include "cli/remote_flags.h"
#include "cli/steer_flags.h"

namespace ragform::cli {
namespace {

int run_score(const std::vector<std::string>& argv) {
  Args a(
      "score", "Log-probabilities of a continuation given a prompt (or of the prompt itself).",
      "prompt + continuation are tokenised together; the tokens past the longest prefix they "
      "share\n"
      "with the prompt's own are scored (a token across the boundary, \" Ro\" + \"me\" -> \" "
      "Rome\",\n"
      "is scored whole; prompt_tokens counts the tokens before it). With --chat the continuation\n"
      "follows the assistant turn's opening (where a reply is generated); --truncate left cuts "
      "the\n"
      "prompt only, so the whole continuation is scored.\n"
      "Without --continuation every prompt token after the first is scored.\n"
      "--json prints {\"tokens\": [{\"id\", \"piece\", \"logprob\"}], \"sum\", "
      "\"prompt_tokens\"}.");
  ReaderFlags rf(a);
  RemoteFlags xf(a);
  PromptFlags pf(a);
  SteerFlags sf(a);
  auto& cont = a.opt<std::string>("-c,--continuation", "TEXT", "the text to score", "");
  auto& cont_file =
      a.opt<std::string>("--continuation-file", "FILE", "read the continuation from FILE", "");
  auto& json = a.flag("--json", "print one JSON object on stdout");
  if (!a.parse(argv)) return 0;
  const reader::SteeringParams steer = sf.params();
  std::string prompt = pf.read();
  std::string c = cont.value;
  if (cont_file.seen) c = read_file_bytes(cont_file.value);
  auto reader = xf.open(rf);
  reader->steering = steer;
  auto r = reader->score(prompt, c);
  if (json.value) {
    nlohmann::json toks = nlohmann::json::array();
    for (auto& t : r.tokens)
      toks.push_back({{"id", t.id}, {"piece", t.piece}, {"logprob", f9(t.logprob)}});
    print_json_line({{"tokens", toks}, {"sum", f9(r.sum)}, {"prompt_tokens", r.prompt_tokens}});
  } else {
    for (auto& t : r.tokens) std::printf("%6d %12.6f  '%s'\n", t.id, t.logprob, t.piece.c_str());
    std::printf("sum %.6f over %zu tokens\n", r.sum, r.tokens.size());
  }
  return 0;
}

RAGFORM_COMMAND("score", "log-probabilities of a continuation (SURE's oracle score)", run_score,
                31);

}  // namespace
}  // namespace ragform::cli
