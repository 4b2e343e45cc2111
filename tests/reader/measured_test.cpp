// reader/measured.h: the one rule of when a run through a reader failed as a whole.
#include <gtest/gtest.h>

#include "reader/http_json.h"
#include "reader/measured.h"

namespace ragform::reader {
namespace {

std::string check_message(const MeasuredTally& t) {
  try {
    t.check("run");
  } catch (const NothingMeasured& e) {
    return e.what();
  }
  return "";
}

TEST(MeasuredTally, NothingMeasuredFailsWithTheFirstReasonOnOneLine) {
  MeasuredTally t;
  t.failed(RequestFailed("no answer from http://x/v1/completions (Connection)\nmore", 0, 3));
  t.failed("openai reader: HTTP 500 from /v1/completions: boom", 500);
  EXPECT_EQ(check_message(t),
            "run: 2 of 2 rows unmeasured: openai reader: no answer from "
            "http://x/v1/completions (Connection) more");
  EXPECT_EQ(t.unmeasured(), 2);
}

TEST(MeasuredTally, SomeMeasuredIsASuccessUnlessEveryFailureIsAClientError) {
  MeasuredTally t;
  t.measured(5);
  EXPECT_NO_THROW(t.check("run"));  // nothing failed
  t.failed("HTTP 400: prompt too long", 400);
  EXPECT_NO_THROW(t.check("run"));
  MeasuredTally keyed;
  keyed.measured(5);
  keyed.failed(RequestFailed("HTTP 401 from /v1/completions: bad key", 401, 1));
  keyed.failed(RequestFailed("HTTP 403 from /v1/completions: forbidden", 403, 1));
  EXPECT_EQ(check_message(keyed),
            "run: 2 of 7 rows unmeasured: openai reader: HTTP 401 from /v1/completions: bad key");
  // The result's own unit: rows measured without a result measured is nothing measured.
  MeasuredTally pairs;
  pairs.measured(3);
  pairs.failed("x", -1);
  EXPECT_NO_THROW(pairs.check("run"));
  EXPECT_THROW(pairs.check("run", 0), NothingMeasured);
}

TEST(MeasuredTally, HopelessOnlyWhileNothingIsMeasuredAndNoPromptWasTheCause) {
  MeasuredTally t;
  EXPECT_FALSE(t.hopeless());
  t.failed(RequestFailed("HTTP 404 from /v1/completions: no such model", 404, 1));
  EXPECT_TRUE(t.hopeless());
  EXPECT_THROW(t.fail_fast("run"), NothingMeasured);
  t.failed("a prompt over the context", -1);
  EXPECT_FALSE(t.hopeless());  // this failure belongs to one prompt: go on
  MeasuredTally m;
  m.measured();
  m.failed(RequestFailed("no answer", 0, 1));
  EXPECT_FALSE(m.hopeless());
  EXPECT_NO_THROW(m.fail_fast("run"));
}

TEST(MeasuredTally, OutagesAreTheFailuresThatSayNothingOfThePrompt) {
  EXPECT_TRUE(is_outage(RequestFailed("x", 0, 1)));
  EXPECT_TRUE(is_outage(RequestFailed("x", 401, 1)));
  EXPECT_TRUE(is_outage(RequestFailed("x", 503, 3)));
  EXPECT_TRUE(is_outage(RequestFailed("x", 429, 3)));
  EXPECT_FALSE(is_outage(RequestFailed("x", 400, 1)));
  EXPECT_FALSE(is_outage(Error("reader", "prompt of 900 tokens exceeds the context")));
  EXPECT_EQ(failure_status(Error("x")), -1);
}

}  // namespace
}  // namespace ragform::reader
