#include "server/generation_fields.h"

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "base/json_file.h"
#include "base/json_number.h"
#include "base/options.h"
#include "reader/generate_params.h"
#include "server/api_json.h"

namespace ragform::server {

using namespace api_json;
using nlohmann::json;

namespace {

// 'stop': a string or an array of strings, each a stop string the reader can apply.
std::vector<std::string> get_stop(const json& j) {
  std::vector<std::string> out;
  if (!j.contains("stop") || j["stop"].is_null()) return out;
  const json& s = j["stop"];
  if (s.is_string()) {
    out.push_back(s.get<std::string>());
  } else if (s.is_array()) {
    for (auto& v : s) {
      if (!v.is_string()) bad("'stop' must be a string or an array of strings", "invalid_type");
      out.push_back(v.get<std::string>());
    }
  } else {
    bad("'stop' must be a string or an array of strings", "invalid_type");
  }
  if (std::string why = reader::stop_strings_problem(out); !why.empty()) bad(why);
  return out;
}

}  // namespace

GenerationFields generation_fields(const json& j, const ApiOptions& opt, int default_max_tokens) {
  std::string model = get_str(j, "model", false);
  if (!model.empty() && model != opt.model_id)
    throw ApiError{
        404, "model '" + model + "' is not served here (this server serves '" + opt.model_id + "')",
        "invalid_request_error", "model_not_found"};
  GenerationFields c;
  // Both fields are checked whichever is read: {"max_tokens": 8, "max_completion_tokens": {}} is
  // a bad request, not a silently ignored field.
  // Any number past the server's limit is that one refusal, however large (a 20-digit value was
  // "outside [0, 1073741824]" while 600 "exceeded the limit of 512": issue 40, pass 10).
  const auto tokens = [&](const char* key) {
    long long x = 0;
    if (j.contains(key) && json_whole_number(j[key], x) && x > opt.max_tokens)
      bad(std::string("'") + key + "' = " + json_excerpt(j[key]) +
              " exceeds this server's limit of " + std::to_string(opt.max_tokens),
          "max_tokens_exceeded");
    return get_int(j, key, -1, 0, opt.max_tokens);
  };
  const int mct = tokens("max_completion_tokens");
  const int mt = tokens("max_tokens");
  if (mt >= 0 && mct >= 0 && mt != mct)  // one was silently read (pass 14)
    bad("max_tokens = " + std::to_string(mt) +
        " and max_completion_tokens = " + std::to_string(mct) + " differ: give one");
  c.gen.max_tokens = mt >= 0 ? mt : mct >= 0 ? mct : std::min(default_max_tokens, opt.max_tokens);
  c.gen.sampling.temperature = get_num(j, "temperature", 1.0, 0.0, 2.0);
  {
    // top_k and top_p: the declared ones of `ragform generate` and Reader.generate
    // (reader/generate_options.h: defaults, ranges, the empty nucleus refused). max_tokens,
    // temperature and seed keep the OpenAI API's names and defaults.
    reader::GenerateRequest g;
    read_declared(j, g, {"top_k", "top_p"});
    try {
      const reader::GenerateParams p = reader::generate_params(g);
      c.gen.sampling.top_k = p.top_k;
      c.gen.sampling.top_p = p.top_p;
    } catch (const OptionError& e) {
      bad("'" + e.key() + "': " + e.why());
    }
  }
  if (j.contains("seed") && !j["seed"].is_null()) {
    // [0, 2^63 - 1], as the CLI's --seed and Python's seed= take it (the declared count's range,
    // reader/generate_options.h).
    const json& v = j["seed"];
    long long x = 0;
    if (!json_whole_number(v, x)) bad("'seed' must be an integer", "invalid_type");
    const bool beyond = x < 0 ||
                        (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(LLONG_MAX)) ||
                        (v.is_number_float() && v.get<double>() >= 0x1p63);
    if (beyond) bad("'seed' = " + json_excerpt(v) + " is outside [0, 9223372036854775807]");
    c.gen.sampling.seed = uint64_t(x);
  }
  c.gen.stop = get_stop(j);
  c.stream = get_bool(j, "stream", false);
  if (get_int(j, "n", 1, 1, 1) != 1) bad("only n = 1 is supported", kUnsupported);
  // OpenAI's fields that change the result and are not implemented here are refused unless they
  // ask for the default, as n is (pass 13: a 200 came back with the output unchanged).
  if (get_int(j, "best_of", 1, 1, INT_MAX) != 1) bad("only best_of = 1 is supported", kUnsupported);
  for (const char* key : {"presence_penalty", "frequency_penalty"})
    if (get_num(j, key, 0.0, -2.0, 2.0) != 0.0)
      bad(std::string("only ") + key + " = 0 is supported", kUnsupported);
  if (j.contains("logit_bias") && !j["logit_bias"].is_null()) {
    if (!j["logit_bias"].is_object()) bad("'logit_bias' must be an object", "invalid_type");
    if (!j["logit_bias"].empty()) bad("logit_bias is not supported (only {})", kUnsupported);
  }
  if (!get_str(j, "suffix", false).empty()) bad("suffix is not supported", kUnsupported);
  // The same for the fields of the chat API and the common servers' extensions (pass 14: each was
  // answered 200 and ignored): refused unless absent, null or the default.
  const auto given = [&](const char* key) { return j.contains(key) && !j[key].is_null(); };
  if (get_num(j, "min_p", 0.0, 0.0, 1.0) != 0.0) bad("only min_p = 0 is supported", kUnsupported);
  if (get_num(j, "repetition_penalty", 1.0, 0.0, 10.0) != 1.0)
    bad("only repetition_penalty = 1 is supported", kUnsupported);
  // The objects' own keys too (pass 16: {"type": "text", "json_schema": {...}} was served).
  // (A type that is not a string was a 500 from the JSON library's conversion: pass 18.)
  if (given("response_format") &&
      !(j["response_format"].is_object() && j["response_format"].contains("type") &&
        j["response_format"]["type"] == "text"))
    bad("response_format is not supported (only {\"type\": \"text\"})", kUnsupported);
  if (given("response_format")) only_keys(j["response_format"], {"type"}, "response_format");
  for (const char* key : {"tools", "functions"})
    if (given(key) && !(j[key].is_array() && j[key].empty()))
      bad(std::string(key) + " are not supported", kUnsupported);
  for (const char* key : {"tool_choice", "function_call"})
    if (given(key) && !(j[key].is_string() && (j[key] == "none" || j[key] == "auto")))
      bad(std::string(key) + " is not supported (only \"none\" or \"auto\")", kUnsupported);
  for (const char* key : {"audio", "prediction"})
    if (given(key)) bad(std::string(key) + " is not supported", kUnsupported);
  if (given("modalities") && j["modalities"] != json::array({"text"}))
    bad("modalities is not supported (only [\"text\"])", kUnsupported);
  // The SDKs' metadata is not read, but it is of its declared type (pass 19, the api tier:
  // "parallel_tool_calls": {...} was answered 200).
  for (const char* key : {"user", "service_tier", "safety_identifier", "prompt_cache_key"})
    get_str(j, key, false);
  for (const char* key : {"store", "parallel_tool_calls"}) get_bool(j, key, false);
  if (given("metadata") && !j["metadata"].is_object())
    bad("'metadata' must be an object", "invalid_type");
  if (given("stream_options")) {
    if (!j["stream_options"].is_object()) bad("'stream_options' must be an object", "invalid_type");
    // include_obfuscation pads the SDK's stream events; nothing here to pad (pass 17).
    only_keys(j["stream_options"], {"include_usage", "include_obfuscation"}, "stream_options");
    get_bool(j["stream_options"], "include_obfuscation", false);  // its type, as declared
    if (get_bool(j["stream_options"], "include_usage", false))
      bad("stream_options.include_usage is not supported", kUnsupported);
  }
  return c;
}

}  // namespace ragform::server
