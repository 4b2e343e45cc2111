// `ragform tokenize -m MODEL (--text T | --file F) [--no-bos] [--no-special] [--json] [--chat]`:
// the model's own tokenizer (engine/tokenizer/tokenizer.h), with llama-tokenize's defaults: special
// tokens (BOS/EOS, [CLS]/[SEP]) are added when the vocabulary asks for them (--no-bos adds
// none), and special-token text in the input is parsed (--no-special disables that). With --chat
// the text is the user turn of the model's chat template and stays text: only the template's own
// markers become special tokens.
// Output is this command's result, so it goes to stdout: one `id -> 'piece'` line per token as
// llama-tokenize prints it, or with --json one line {"ids": [...], "pieces": [...]} (pieces that
// are not valid UTF-8, e.g. a lone byte token, have their invalid bytes replaced by U+FFFD).
#include <cstdio>
#include <string>

#include "base/error.h"
#include "base/mapped_file.h"
#include "base/options.h"
#include "cli/args.h"
#include "cli/command.h"
#include "cli/json_out.h"
#include "cli/reader_flags.h"
#include "engine/gguf/gguf.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/tokenizer.h"
#include "text/utf8.h"

namespace ragform::cli {
namespace {

int cmd_tokenize(const std::vector<std::string>& argv) {
  Args a("tokenize", "Turn text into token ids with a model's own tokenizer (as llama-tokenize).");
  auto& model =
      a.opt<std::string>("-m,--model", "FILE", "GGUF model or vocabulary file").required();
  auto& text = a.opt<std::string>("--text", "T", "text to tokenize");
  auto& file = a.opt<std::string>("--file", "F", "read the text to tokenize from file F");
  auto& no_bos = a.flag("--no-bos", "add no special tokens (no BOS, EOS, [CLS] or [SEP])");
  auto& no_special = a.flag("--no-special", "do not parse special-token text in the input");
  auto& json = a.flag("--json", "print one JSON object {\"ids\", \"pieces\"} on stdout");
  auto& chat = a.flag("--chat",
                      "render the text as the user turn of the model's chat template first, and "
                      "print the rendered prompt on stderr");
  auto& system = a.opt<std::string>("--system", "TEXT", "system message for --chat", "");
  auto& chat_template = chat_template_flag(a);
  if (!a.parse(argv)) return 0;
  if (text.seen == file.seen) throw UsageError("tokenize", "give exactly one of --text or --file");

  std::string prompt = text.seen ? text.value : read_file_bytes(file.value);
  auto f = gguf::File::open(model.value);
  auto tok = tok::Tokenizer::from_gguf(*f);
  std::vector<int32_t> ids;
  if (chat_template.seen && !chat.value)
    throw UsageError("--chat-template", "names the format of --chat; give --chat too");
  if (chat.value) {
    tok::ChatFamily family;
    try {
      family =
          tok::chat_family_of(f->get_string("tokenizer.chat_template", ""), chat_template.value);
    } catch (const OptionError& e) {
      throw UsageError("--chat-template", e.why());
    }
    if (family == tok::ChatFamily::None)
      throw Error("tokenize", model.value +
                                  ": --chat asked for, but the model has no chat template: name "
                                  "its format with --chat-template");
    std::vector<tok::ChatMessage> msgs;
    if (!system.value.empty()) msgs.push_back({"system", system.value});
    msgs.push_back({"user", prompt});
    // The messages are text: special-token text in them stays text (as in serve's chat).
    tok::ChatPrompt cp =
        tok::tokenize_chat(*tok, family, msgs, /*add_generation_prompt=*/true, !no_bos.value);
    std::fprintf(stderr, "chat template: %s\n%s\n", tok::family_name(family).c_str(),
                 cp.text.c_str());
    ids = no_special.value ? tok->encode(cp.text, !no_bos.value, false) : std::move(cp.ids);
  } else {
    ids = tok->encode(prompt, !no_bos.value, !no_special.value);
  }

  if (json.value) {
    nlohmann::json pieces = nlohmann::json::array();
    for (int32_t id : ids) pieces.push_back(tok->token_to_piece(id, true));
    print_json_line({{"ids", ids}, {"pieces", pieces}});
    return 0;
  }
  for (int32_t id : ids) {
    const std::string piece = tok->token_to_piece(id, true);
    std::printf("%6d -> '", id);
    if (text::is_valid_utf8(piece)) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::printf("'\n");
    } else {  // a byte token or a partial character: show the bytes
      for (unsigned char c : piece) std::printf("<0x%02X>", c);
      std::printf("' (utf-8 decode failure)\n");
    }
  }
  return 0;
}

}  // namespace

RAGFORM_COMMAND("tokenize", "turn text into token ids with the model's own tokenizer", cmd_tokenize,
                20);

}  // namespace ragform::cli
