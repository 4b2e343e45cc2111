// The checks both remote readers (OpenAIReader, RemoteEncoder) make of every field of a server's
// answer: a value of the wrong type or out of range is a RequestFailed naming the method, the
// field's path and the server ("openai reader: count_tokens: usage.prompt_tokens: expected an
// integer, got string \"12\" (from http://...)"), never a nlohmann type_error or a silently
// wrong number. Each reader derives its own checks (log-probs, attention rows, vectors) from it.
#pragma once
#include <climits>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/excerpt.h"
#include "reader/http_json.h"

namespace ragform::reader {

class AnswerCheck {
 public:
  using json = nlohmann::json;
  AnswerCheck(std::string from, std::string method, std::string who)
      : from_(std::move(from)), method_(std::move(method)), who_(std::move(who)) {}

  [[noreturn]] void bad(const std::string& what) const {
    throw RequestFailed(method_ + ": " + what + " (from " + from_ + ")", 200, 1, who_);
  }
  std::string str(const json& v, const std::string& path) const {
    if (!v.is_string()) bad(path + ": expected a string, got " + type_of(v));
    return v.get<std::string>();
  }
  long long integer(const json& v, const std::string& path, long long lo, long long hi) const {
    if (!v.is_number_integer()) bad(path + ": expected an integer, got " + type_of(v));
    if (v.is_number_unsigned() ? v.get<unsigned long long>() > (unsigned long long)hi
                               : (v.get<long long>() < lo || v.get<long long>() > hi))
      bad(path + ": " + v.dump() + " is out of range (" + std::to_string(lo) + ".." +
          std::to_string(hi) + ")");
    return v.get<long long>();
  }
  int count(const json& v, const std::string& path) const {
    return int(integer(v, path, 0, INT_MAX));
  }
  // A value's type as a message names it: "object", "null", "number 3.7", "string \"12\"".
  static std::string type_of(const json& v) {
    return v.is_primitive() && !v.is_null()
               ? std::string(v.type_name()) + " " + excerpt(v.dump(), 40)
               : std::string(v.type_name());
  }

 private:
  std::string from_, method_, who_;
};

}  // namespace ragform::reader
