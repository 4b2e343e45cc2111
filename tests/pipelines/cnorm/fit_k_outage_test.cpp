// fit_k over a reader whose server fails: a refused key or a closed port is the server's error, not
// "a prompt with one document does not fit" (reader/measured.h is_outage); a prompt refused for
// its length (400) still counts as not fitting.
#include <gtest/gtest.h>

#include "base/error.h"
#include "capital_items.h"
#include "fake_reader.h"
#include "pipelines/cnorm/sweep.h"
#include "reader/http_json.h"

namespace ragform::cnorm {
namespace {

using testing::capital_items;
using testing::FakeReader;
using testing::kQaTemplate;

TEST(CnormFitK, AServerOutageIsTheServersErrorNotALength) {
  FakeReader r;
  r.tokens = [](const std::string&) -> int {
    throw reader::RequestFailed("HTTP 401 from /v1/completions: invalid API key", 401, 1);
  };
  const std::vector<Format> f = {{{"none", ""}, 0.0, 1}};
  try {
    fit_k(r, Task::Qa, kQaTemplate, capital_items(), 3, f, 1000);
    FAIL() << "no error";
  } catch (const reader::RequestFailed& e) {
    EXPECT_EQ(e.status(), 401);
    EXPECT_EQ(std::string(e.what()).find("does not fit"), std::string::npos) << e.what();
  }
  r.tokens = [](const std::string&) -> int {
    throw reader::RequestFailed("no answer from http://127.0.0.1:9/v1/completions", 0, 5);
  };
  EXPECT_THROW(fit_k(r, Task::Qa, kQaTemplate, capital_items(), 3, f, 1000), reader::RequestFailed);
}

TEST(CnormFitK, APromptRefusedForItsLengthStillDoesNotFit) {
  FakeReader r;
  r.tokens = [](const std::string&) -> int {
    throw reader::RequestFailed("HTTP 400 from /v1/completions: prompt exceeds the context", 400,
                                1);
  };
  const std::vector<Format> f = {{{"none", ""}, 0.0, 1}};
  try {
    fit_k(r, Task::Qa, kQaTemplate, capital_items(), 3, f, 1000);
    FAIL() << "no error";
  } catch (const reader::RequestFailed&) {
    FAIL() << "a length refusal propagated as a server failure";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a prompt with one document does not fit"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ragform::cnorm
