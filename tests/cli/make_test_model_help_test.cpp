// `ragform make-test-model --help`: the option texts point at the Shapes and Types lists where the
// help actually prints them (before the options).
#include <gtest/gtest.h>

#include "support/test_support.h"

namespace {
using ragform::testing::run_ragform;

TEST(MakeTestModelHelp, OptionsPointAtTheListsAboveThem) {
  auto r = run_ragform("make-test-model --help");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string& h = r.out;
  EXPECT_EQ(h.find("see below"), std::string::npos) << h;
  const size_t shapes = h.find("Shapes:"), types = h.find("Types:"), options = h.find("options:");
  const size_t shape_flag = h.find("--shape S"), type_flag = h.find("--type T");
  ASSERT_NE(shapes, std::string::npos) << h;
  ASSERT_NE(types, std::string::npos) << h;
  ASSERT_NE(shape_flag, std::string::npos) << h;
  ASSERT_NE(type_flag, std::string::npos) << h;
  EXPECT_LT(shapes, options);
  EXPECT_LT(types, options);
  EXPECT_NE(h.find("Shapes listed above", shape_flag), std::string::npos) << h;
  EXPECT_NE(h.find("Types listed above", type_flag), std::string::npos) << h;
}

}  // namespace
