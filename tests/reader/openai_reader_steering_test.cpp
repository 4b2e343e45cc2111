// The OpenAI reader cannot steer a server's attention: an active Reader::steering is NotSupported
// on every call, before any request (the URL below is never contacted); off and rescale:1 are no
// steering and pass through to the transport.
#include <gtest/gtest.h>

#include "base/error.h"
#include "reader/openai_reader.h"

namespace ragform::reader {
namespace {

TEST(OpenAIReaderSteering, ActiveSteeringIsNotSupported) {
  OpenAIOptions o;
  o.base_url = "http://127.0.0.1:9";  // discard port: a request would fail, not hang
  o.retries = 0;
  o.timeout_s = 2;
  OpenAIReader r(o);
  runtime::parse_steer_rule("rescale:2", r.steering, "--steer");
  r.steering.spans = {{0, 3}};
  try {
    r.generate("abc", GenerateParams{});
    FAIL() << "no exception";
  } catch (const NotSupported& e) {
    EXPECT_NE(std::string(e.what()).find("attention steering (rescale:2"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(r.generate_batch({"abc", "def"}, GenerateParams{}), NotSupported);
  EXPECT_THROW(r.score("abc", "d"), NotSupported);
  EXPECT_THROW(r.attention("abc", AttentionQuery{}), NotSupported);
  // rescale:1 steers nothing: the call goes to the transport (and fails there, not as steering).
  runtime::parse_steer_rule("rescale:1", r.steering, "--steer");
  try {
    r.generate("abc", GenerateParams{});
  } catch (const NotSupported&) {
    FAIL() << "rescale:1 refused as steering";
  } catch (const Error&) {
  }
}

}  // namespace
}  // namespace ragform::reader
