// `ragform tokenize`, `logits` and `attention` on the architecture fixtures (gemma3, phi3, Llama
// 3.1) through the real binary, against llama.cpp's references; a GGUF with a tensor the
// architecture does not read fails with one line naming it.
#include <cmath>
#include <cstring>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/gguf/gguf.h"
#include "support/test_support.h"

namespace {
using nlohmann::json;
using ragform::testing::run_ragform;
using ragform::testing::shared_path;

double max_diff(const std::string& a, const std::string& b) {
  double d = 0;
  for (size_t i = 0; i < a.size() / 4; ++i) {
    float x, y;
    std::memcpy(&x, a.data() + 4 * i, 4);
    std::memcpy(&y, b.data() + 4 * i, 4);
    d = std::max(d, double(std::fabs(x - y)));
  }
  return d;
}

class ArchCommands : public ::testing::TestWithParam<std::string> {};

TEST_P(ArchCommands, TokenizeAndLogitsMatchLlamaCpp) {
  const std::string name = GetParam();
  REQUIRE_SHARED(model, "fixtures/models/" + name + ".gguf");
  const double tol = name == "tiny-gemma3" ? 1e-2 : 1e-3;
  auto dir = ragform::testing::temp_dir("arch_cli_" + name);
  for (const char* p : {"p1", "p2"}) {
    SCOPED_TRACE(name + " " + p);
    REQUIRE_SHARED(prompt, std::string("fixtures/ref/inputs/") + p + ".txt");
    json meta = json::parse(
        ragform::testing::read_file(shared_path("fixtures/ref/" + name + "/" + p + "/meta.json")));
    auto r =
        run_ragform("tokenize -m '" + model.string() + "' --file '" + prompt.string() + "' --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out)["ids"], meta["prompt_ids"]);

    const bool all = !meta["logits_all"]["file"].is_null();
    const std::string out = (dir / (std::string(p) + ".f32")).string();
    r = run_ragform("logits -m '" + model.string() + "' -f '" + prompt.string() + "' --positions " +
                    (all ? "all" : "last") + " -o '" + out + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string ref = ragform::testing::read_file(
        shared_path("fixtures/ref/" + name + "/" + p + "/" +
                    meta[all ? "logits_all" : "logits_last"]["file"].get<std::string>()));
    const std::string ours = ragform::testing::read_file(out);
    ASSERT_EQ(ours.size(), ref.size());
    EXPECT_LE(max_diff(ours, ref), tol);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ArchCommands,
                         ::testing::Values("tiny-gemma3", "tiny-phi3", "tiny-llama31"),
                         [](const auto& param_info) {
                           std::string s = param_info.param;
                           for (auto& c : s)
                             if (!std::isalnum((unsigned char)c)) c = '_';
                           return s;
                         });

TEST(ArchCommands, AttentionOnASlidingLayer) {
  REQUIRE_SHARED(model, "fixtures/models/tiny-gemma3.gguf");
  REQUIRE_SHARED(prompt, "fixtures/ref/inputs/p2.txt");
  auto r = run_ragform("attention -m '" + model.string() + "' --file '" + prompt.string() +
                       "' --layer 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  const auto mean = j["mean"].get<std::vector<double>>();
  const int q = j["query_position"];
  ASSERT_EQ(mean.size(), size_t(q + 1));
  double s = 0;
  for (int k = 0; k <= q; ++k) {
    s += mean[size_t(k)];
    if (q - k >= 16) {
      EXPECT_EQ(mean[size_t(k)], 0.0) << k;  // outside the window of 16
    }
  }
  EXPECT_NEAR(s, 1.0, 1e-5);
}

TEST(ArchCommands, UnknownTensorFailsNamingIt) {
  REQUIRE_SHARED(src, "fixtures/models/tiny-phi3.gguf");
  auto dir = ragform::testing::temp_dir("arch_cli_extra");
  auto f = ragform::gguf::File::open(src.string());
  auto w = ragform::gguf::Writer::copy_of(*f);
  std::vector<float> extra(32, 1.0f);
  w.add_tensor("blk.0.attn_sinks.weight", {32}, ragform::gguf::TensorType::F32, extra.data(),
               extra.size() * 4);
  const std::string path = (dir / "extra.gguf").string();
  w.write(path);
  auto r = run_ragform("logits -m '" + path + "' -p hi -o '" + (dir / "x.f32").string() + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("tensor 'blk.0.attn_sinks.weight' is not part of the phi3 architecture"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
