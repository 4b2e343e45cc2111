// `ragform info MODEL.gguf [--json] [--metadata]`: the model card (engine/model/model_card.h).
// The card is this command's output, so it goes to stdout in both forms.
#include <cstdio>
#include <iostream>

#include "cli/args.h"
#include "cli/command.h"
#include "engine/gguf/gguf.h"
#include "engine/model/model_card.h"

namespace ragform::cli {
namespace {

int cmd_info(const std::vector<std::string>& argv) {
  Args a("info",
         "Show a GGUF model's card: architecture, dimensions, tensor types, tokenizer, "
         "special tokens, RoPE settings and chat-template family.");
  auto& model = a.positional("MODEL", "GGUF model (or vocabulary-only) file");
  auto& json = a.flag("--json", "print one JSON object on stdout instead of text");
  auto& meta = a.flag("--metadata", "also list every metadata key and every tensor");
  if (!a.parse(argv)) return 0;

  auto f = gguf::File::open(*model.value);
  model::ModelCard card = model::summarize(*f);
  if (json.value) {
    nlohmann::json j = model::to_json(card);
    if (meta.value) {
      nlohmann::json kv = nlohmann::json::object();
      for (const auto& [k, v] : f->metadata()) kv[k] = v.to_display();
      nlohmann::json ts = nlohmann::json::array();
      for (const auto& t : f->tensors())
        ts.push_back({{"name", t.name},
                      {"type", gguf::type_name(t.type)},
                      {"ne", t.ne},
                      {"n_bytes", t.n_bytes}});
      j["metadata"] = kv;
      j["tensors"] = ts;
    }
    // Token texts may hold invalid UTF-8: replace rather than throw while dumping.
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  std::cout << model::to_text(card);
  if (meta.value) {
    std::cout << "\nmetadata (" << f->metadata().size() << " keys)\n";
    for (const auto& [k, v] : f->metadata())
      std::cout << "  " << k << " (" << gguf::value_type_name(v.type) << ") = " << v.to_display()
                << "\n";
    std::cout << "\ntensors (" << f->tensors().size() << ")\n";
    for (const auto& t : f->tensors()) {
      std::cout << "  " << t.name << "  " << gguf::type_name(t.type) << "  [";
      for (size_t i = 0; i < t.ne.size(); ++i) std::cout << (i ? ", " : "") << t.ne[i];
      std::cout << "]  " << t.n_bytes << " bytes\n";
    }
  }
  return 0;
}

}  // namespace
}  // namespace ragform::cli

RAGFORM_COMMAND("info", "model card of a GGUF file: arch, dims, types, vocab, chat template",
                ragform::cli::cmd_info, 10);
