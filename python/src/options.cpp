// ragform._ragform.options(verb): each verb's declared options (base/options.h) as data, from
// which python/ragform's wrappers build their signatures and defaults.
#include "options.h"

#include <functional>
#include <map>

#include "pipelines/cnorm/cnorm.h"
#include "pipelines/spotlight/spotlight.h"
#include "pipelines/sure/sure.h"
#include "reader/encoder_settings.h"
#include "reader/engine_settings.h"
#include "reader/generate_options.h"
#include "reader/openai_reader.h"
#include "reader/prompt_logits.h"
#include "tune/args.h"
#include "tune/present.h"

namespace ragform::py {

namespace {

const char* kind_name(OptionKind k) {
  switch (k) {
    case OptionKind::Count:
      return "count";
    case OptionKind::Real:
      return "real";
    case OptionKind::Text:
      return "text";
    case OptionKind::Switch:
      return "switch";
    case OptionKind::OnOff:
      return "on_off";
    case OptionKind::List:
      return "list";
  }
  return "text";
}

// The default as Python spells it.
pyb::object python_default(const OptionInfo& o) {
  if (o.is_optional && o.default_text == "none") return pyb::none();
  switch (o.decl.kind) {
    case OptionKind::Count:
      return pyb::int_(std::stoll(o.default_text));
    case OptionKind::Real:
      return pyb::float_(std::stod(o.default_text));
    case OptionKind::Switch:
    case OptionKind::OnOff:
      return pyb::bool_(o.default_text == "true");
    case OptionKind::List:
      return pyb::none();
    case OptionKind::Text:
      break;
  }
  // A file or a name that is not given: None, as Python spells "nothing" (but system="": a value).
  if (o.default_text.empty() && !o.decl.empty_is_value) return pyb::none();
  return pyb::str(o.default_text);
}

// Every verb with a declaration.
const std::map<std::string, std::function<std::vector<OptionInfo>()>>& verbs() {
  static const std::map<std::string, std::function<std::vector<OptionInfo>()>> v = {
      {"tune", [] { return option_infos<tune::TuneArgs>(); }},
      {"model", [] { return option_infos<reader::EngineSettings>(); }},
      {"encoder", [] { return option_infos<reader::EncoderSettings>(); }},
      {"openai_reader", [] { return option_infos<reader::OpenAIOptions>(); }},
      {"logits", [] { return option_infos<reader::LogitsRequest>(); }},
      {"generate", [] { return option_infos<reader::GenerateRequest>(); }},
      {"sure.evaluate", [] { return option_infos<sure::EvalOptions>(); }},
      {"sure.attention", [] { return option_infos<sure::AttentionRequest>(); }},
      {"sure.perturb", [] { return option_infos<sure::PerturbRequest>(); }},
      {"sure.filter", [] { return option_infos<sure::FilterRequest>(); }},
      {"sure.oracle", [] { return option_infos<sure::OracleRequest>(); }},
      {"cnorm.calibrate", [] { return option_infos<cnorm::CalibrationRequest>(); }},
      {"cnorm.evaluate", [] { return option_infos<cnorm::EvalRequest>(); }},
      {"bias.position_bias", [] { return option_infos<cnorm::BiasCurveRequest>(); }},
      {"bias.document_relevance", [] { return option_infos<cnorm::RelevanceRequest>(); }},
      {"spotlight.select", [] { return option_infos<spotlight::SelectOptions>(); }},
      {"present", [] { return option_infos<tune::PresentRequest>(); }},
  };
  return v;
}

}  // namespace

pyb::list options_list(const std::vector<OptionInfo>& infos) {
  pyb::list out;
  for (const OptionInfo& o : infos) {
    pyb::dict d;
    d["key"] = o.decl.key;
    d["keyword"] = o.decl.python_key();
    d["flag"] = o.decl.flag.empty() ? pyb::object(pyb::none()) : pyb::str(o.decl.flag);
    d["kind"] = kind_name(o.decl.kind);
    d["default"] = python_default(o);
    const bool ranged =
        o.decl.has_range() && (o.decl.kind == OptionKind::Count || o.decl.kind == OptionKind::Real);
    d["min"] = ranged ? pyb::object(pyb::float_(o.decl.lo)) : pyb::object(pyb::none());
    d["max"] = ranged && o.decl.hi < 9.2e18 ? pyb::object(pyb::float_(o.decl.hi))
                                            : pyb::object(pyb::none());
    d["required"] = o.decl.required;
    d["positional"] = o.decl.positional;
    d["optional"] = o.is_optional;
    d["help"] = o.decl.key_help();
    d["unset"] = o.decl.unset;
    d["env"] = o.decl.env.empty() ? pyb::object(pyb::none()) : pyb::str(o.decl.env);
    out.append(d);
  }
  return out;
}

void bind_options(pyb::module_& m) {
  m.def(
      "options",
      [](const std::string& verb) {
        auto it = verbs().find(verb);
        if (it == verbs().end()) {
          std::string names;
          for (const auto& [k, f] : verbs()) names += (names.empty() ? "" : ", ") + k;
          throw UsageError("options", "no declared verb '" + verb + "' (" + names + ")");
        }
        return options_list(it->second());
      },
      pyb::arg("verb"),
      "A verb's declared options: [{key, flag, kind, default, min, max, required, positional, "
      "optional, help, unset, env}] ('model': ragform.Model's reader and engine settings), the "
      "one declaration the CLI's flags and this package's keywords come from.");
}

}  // namespace ragform::py
