// Issue 40, pass 23: with --reader openai a flag of the native engine is a usage error, never
// ignored: `score --reader openai --ctx 10 --truncate left` printed the untruncated sum, the
// server's, as if the cut had been made. tune and reproduce fit prompts to --ctx, so it stays
// theirs. Refused before any connection (the port below has no server).
#include <gtest/gtest.h>

#include <string>

#include "support/test_support.h"

namespace ragform::testing {
namespace {

const std::string kRemote = " --reader openai --base-url http://127.0.0.1:9/v1 -m m";

TEST(RemoteNativeFlags, EngineFlagsAreRefusedWithAServer) {
  for (const std::string& verb :
       {std::string("score -p a -c b"), std::string("generate -p a -n 1")})
    for (const std::string& flag :
         {std::string("--ctx 10"), std::string("--truncate left"), std::string("--kv f16"),
          std::string("--prefix-cache off"), std::string("--prefix-cache-mb 8"),
          std::string("--f16-gemm exact"), std::string("--chat --chat-template chatml")}) {
      SCOPED_TRACE(verb + " " + flag);
      const RunResult r = run_ragform(verb + kRemote + " " + flag);
      EXPECT_EQ(r.exit_code, 2) << r.err;
      const std::string name =
          flag.rfind("--chat ", 0) == 0 ? "--chat-template" : flag.substr(0, flag.find(' '));
      EXPECT_NE(r.err.find("ragform: " + name + ": sets the native engine; with --reader openai"),
                std::string::npos)
          << r.err;
    }
}

}  // namespace
}  // namespace ragform::testing
