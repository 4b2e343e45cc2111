// Issue 40, eighth pass (G5): an API key holding CR LF was sent as a second header line (a
// `Transfer-Encoding: chunked` line beside the library's own Content-Length: request smuggling
// toward the server), and a NUL cut it short. Every client refuses such a key before any
// request, naming `api_key` and never quoting the key.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "base/error.h"
#include "reader/http_json.h"
#include "reader/openai_reader.h"
#include "reader/remote_encoder.h"

namespace ragform::reader {
namespace {

const std::string kSecret = "s3cret";

void expect_refused(const std::function<void()>& f, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": accepted";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("api_key"), std::string::npos) << what << ": " << m;
    EXPECT_NE(m.find("control character"), std::string::npos) << what << ": " << m;
    EXPECT_EQ(m.find(kSecret), std::string::npos) << what << ": the key is quoted: " << m;
  }
}

TEST(ApiKey, AKeyWithAControlCharacterIsRefusedByEveryClient) {
  for (const std::string& key : {kSecret + "\r\nX-Injected: 1", kSecret + "\n",
                                 kSecret + '\0' + "x", kSecret + "\x7f", "\t" + kSecret}) {
    expect_refused([&] { check_api_key(key); }, "check_api_key");
    OpenAIOptions o;
    o.base_url = "http://127.0.0.1:9";  // never reached: refused before any request
    o.api_key = key;
    expect_refused([&] { OpenAIReader r(o); }, "OpenAIReader");
    RemoteEncoderOptions e;
    e.base_url = "http://127.0.0.1:9";
    e.api_key = key;
    expect_refused([&] { RemoteEncoder enc(e); }, "RemoteEncoder");
  }
  EXPECT_NO_THROW(check_api_key("sk-abc_DEF.123~+/="));
  EXPECT_NO_THROW(check_api_key(""));
}

}  // namespace
}  // namespace ragform::reader
