#include "base/progress.h"

#include <gtest/gtest.h>

namespace ragform {

TEST(Progress, LineShowsCountRateAndEta) {
  EXPECT_EQ(Progress::format_line("eval", 50, 100, 10.0), "eval  50/100  5.0/s  ETA 0m10s");
  EXPECT_EQ(Progress::format_line("scan", 30, 0, 3.0), "scan  30  10.0/s");
  EXPECT_EQ(Progress::format_line("x", 0, 10, 0.0), "x  0/10  0.0/s  ETA 0m00s");
}

}  // namespace ragform
