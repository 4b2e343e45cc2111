// Requests sent as raw bytes to a real `ragform serve`, each alone on its connection, with the
// status and message each must get: the form of the server's framing tests (issue 40's passes).
#pragma once
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/raw_http.h"
#include "server/serve_harness.h"

namespace ragform::testing {

// The status of a raw response as its three digits ("" when there is none).
inline std::string status_of(const std::string& response) {
  return response.size() >= 12 ? response.substr(9, 3) : "";
}

struct RawCase {
  std::string what;
  std::string request;
  const char* status;
  const char* message;  // a part of the reply ("" for any)
};

// Each request alone on a connection: its status and message, one response only (nothing after
// the refused request is answered), and the server still up.
inline void expect_raw_cases(const ServeProcess& srv, const std::vector<RawCase>& cases) {
  for (const RawCase& c : cases) {
    RawSocket s(srv.port());
    ASSERT_TRUE(s.ok());
    s.send(c.request);
    const auto got = s.read_until_close(30);
    ASSERT_TRUE(got) << c.what << ": no answer";
    EXPECT_EQ(status_of(*got), c.status) << c.what << ": " << got->substr(0, 400);
    EXPECT_EQ(count_responses(*got), 1u) << c.what << ": " << *got;
    EXPECT_NE(got->find(c.message), std::string::npos) << c.what << ": " << got->substr(0, 400);
    SCOPED_TRACE(c.what);
    expect_alive(srv);
  }
}

}  // namespace ragform::testing
