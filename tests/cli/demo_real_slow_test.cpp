// The demo on the trained reader (RAGFORM_GEMMA, Gemma 3 270M) at working sizes: 2 story-needle
// items over 3 documents, 6 NQ-Open questions (SURE's 100 pairs, most of the time), 10 HotpotQA
// questions. 6 min 46 s on a loaded 2-core machine with VNNI, so label `slow`:
//   eval "$(scripts/models.sh --print)"; ctest --preset release -L slow -R DemoRealFull
#include <gtest/gtest.h>

#include "support/demo_on_gemma.h"
#include "support/real_models.h"

TEST(DemoRealFull, EveryPipelineRunsOnGemmaAtWorkingSizes) {
  REQUIRE_REAL_MODEL(gemma, "RAGFORM_GEMMA");
  ragform::testing::check_demo_on_gemma(gemma, /*needle=*/2, /*docs=*/3, /*nq=*/6, /*hotpot=*/10);
}
