// The demo on the trained reader (RAGFORM_GEMMA, Gemma 3 270M) at the smallest sizes that still
// run every step: one story-needle item over 2 documents, one NQ-Open question, two HotpotQA
// questions. It is in the default tier, so it is kept to about a minute on 2 cores; the demo at
// working sizes (SURE's 100 pairs) is demo_real_slow_test.cpp, label `slow`.
#include <gtest/gtest.h>

#include "support/demo_on_gemma.h"
#include "support/real_models.h"

TEST(DemoReal, EveryPipelineRunsOnGemma) {
  REQUIRE_REAL_MODEL(gemma, "RAGFORM_GEMMA");
  ragform::testing::check_demo_on_gemma(gemma, /*needle=*/1, /*docs=*/2, /*nq=*/1, /*hotpot=*/2);
}
