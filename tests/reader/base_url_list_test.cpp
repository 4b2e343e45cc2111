// A comma list of base URLs (issue 40): a list naming one server twice is refused (compared as
// HttpJsonClient reads a URL: the host in any case, the scheme's port written or not, the
// path "/v1" written or not, a trailing '/'), with --base-url named and no credentials quoted; and
// the requests in flight over all servers (concurrency x servers, each a thread and a socket) are
// at most kMaxConcurrency. Both before any request: no server is needed to be refused.
#include <gtest/gtest.h>

#include <string>

#include "base/options.h"
#include "echo_server.h"
#include "reader/openai_reader.h"

namespace ragform::reader {
namespace {

struct Refusal {
  bool refused = false;
  std::string key, what;
};

Refusal open(const std::string& list, int concurrency = 4) {
  OpenAIOptions o;
  o.base_url = list;
  o.concurrency = concurrency;
  o.timeout_s = 2;
  Refusal r;
  try {
    OpenAIReader reader(o);
  } catch (const OptionError& e) {
    r.refused = true;
    r.key = e.key();
    r.what = e.what();
  }
  return r;
}

TEST(BaseUrlList, OneServerTwiceIsRefusedHoweverItIsWritten) {
  // Port 9 (discard) on loopback: nothing is asked of it, the list is refused first.
  for (const std::string list : {
           "http://127.0.0.1:9/v1,http://127.0.0.1:9/v1",
           "http://127.0.0.1:9/v1,http://127.0.0.1:9/v1/",
           "http://127.0.0.1:9,http://127.0.0.1:9/v1",
           "http://LOCALHOST/v1,http://localhost:80/v1//",
           "http://127.0.0.1:9/v1, http://127.0.0.1:09/v1",
           "http://127.0.0.1:8/v1,http://127.0.0.1:9/v1,http://127.0.0.1:8/v1",
       }) {
    const Refusal r = open(list);
    ASSERT_TRUE(r.refused) << list;
    EXPECT_EQ(r.key, "base_url") << r.what;  // the CLI says --base-url, Python base_url=
    EXPECT_NE(r.what.find("already in the list"), std::string::npos) << r.what;
  }
  // Eight copies at --concurrency 1024 (1,772+ threads before): refused as a duplicate.
  std::string eight;
  for (int i = 0; i < 8; ++i) eight += (i ? "," : "") + std::string("http://127.0.0.1:9/v1");
  EXPECT_EQ(open(eight, kMaxConcurrency).key, "base_url");
}

TEST(BaseUrlList, TheRefusalQuotesNoCredentials) {
  const Refusal r = open("http://127.0.0.1:9/v1,http://bob:s3cret@127.0.0.1:9/v1");
  ASSERT_TRUE(r.refused);
  EXPECT_EQ(r.key, "base_url");
  EXPECT_EQ(r.what.find("s3cret"), std::string::npos) << r.what;
  EXPECT_EQ(r.what.find("bob"), std::string::npos) << r.what;
  EXPECT_NE(r.what.find("***@127.0.0.1:9"), std::string::npos) << r.what;
}

TEST(BaseUrlList, RequestsInFlightOverAllServersAreBounded) {
  std::string eight;
  for (int i = 1; i <= 8; ++i)
    eight += (i > 1 ? "," : "") + ("http://127.0.0.1:" + std::to_string(i) + "/v1");
  const Refusal r = open(eight, kMaxConcurrency);
  ASSERT_TRUE(r.refused);
  EXPECT_EQ(r.key, "concurrency");
  EXPECT_NE(r.what.find("8192"), std::string::npos) << r.what;
  EXPECT_NE(r.what.find("1024"), std::string::npos) << r.what;
  EXPECT_NE(r.what.find("at most 128"), std::string::npos) << r.what;

  // Two servers: 512 each is the limit, 513 is over it.
  // Servers that answer the fleet's weights probe alike.
  auto same = [](const std::string&) { return std::string(R"({"choices":[{"text":"x"}]})"); };
  testing::EchoServer a(200, same), b(200, same);
  const std::string two = a.url() + "," + b.url();
  const Refusal over = open(two, kMaxConcurrency / 2 + 1);
  ASSERT_TRUE(over.refused);
  EXPECT_EQ(over.key, "concurrency");
  EXPECT_NE(over.what.find("1026"), std::string::npos) << over.what;
  EXPECT_FALSE(open(two, kMaxConcurrency / 2).refused);
  // One server keeps the whole range.
  EXPECT_FALSE(open(a.url(), kMaxConcurrency).refused);
}

}  // namespace
}  // namespace ragform::reader
