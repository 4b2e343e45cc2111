// A model whose weights or hyperparameters are not finite (NaN norm epsilon, NaN weights) makes
// every activation NaN: argmax of NaN logits is token 0 (an empty answer) and the SIMD softmax
// turns NaN scores into uniform attention. Both must fail with an error naming the model, in the
// engine (Context::eval) and so in every command.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "engine/gguf/gguf.h"
#include "engine/model/model.h"
#include "engine/runtime/context.h"
#include "support/test_support.h"

namespace ragform::runtime {
namespace {

using ragform::testing::run_ragform;

// stories260K with the RMS norm epsilon set to NaN.
std::string nan_epsilon_model(const std::filesystem::path& src, const std::filesystem::path& dir) {
  auto f = gguf::File::open(src.string());
  auto w = gguf::Writer::copy_of(*f);
  w.set("llama.attention.layer_norm_rms_epsilon", gguf::Value::f32(std::nanf("")));
  const std::string out = (dir / "nan-eps.gguf").string();
  w.write(out);
  return out;
}

// stories260K with every value of the F32 tensor `name` overwritten by NaN in the file.
std::string nan_tensor_model(const std::filesystem::path& src, const std::filesystem::path& dir,
                             const std::string& name) {
  const std::string out = (dir / ("nan-" + name + ".gguf")).string();
  std::filesystem::copy_file(src, out);
  uint64_t at = 0, n = 0;
  {
    auto f = gguf::File::open(out);
    const gguf::TensorInfo* t = nullptr;
    for (const auto& ti : f->tensors())
      if (ti.name == name) t = &ti;
    if (!t || t->type != gguf::TensorType::F32) throw Error("test", "no F32 tensor " + name);
    at = f->data_offset() + t->offset;
    n = uint64_t(t->n_elements());
  }
  std::fstream io(out, std::ios::in | std::ios::out | std::ios::binary);
  io.seekp(std::streamoff(at));
  const float nan = std::nanf("");
  for (uint64_t i = 0; i < n; ++i) io.write(reinterpret_cast<const char*>(&nan), sizeof nan);
  return out;
}

void expect_non_finite_error(const std::string& model, const std::string& what) {
  auto m = model::Model::load(model);
  ContextParams cp;
  cp.n_ctx = 32;
  cp.threads = 1;
  Context ctx(*m, cp);
  SeqInput in;
  in.seq = ctx.new_sequence();
  in.tokens = {1, 400, 300};
  if (what == "attention weights") {
    in.logits = LogitsMode::None;
    in.attn_layers = {0};
  }
  try {
    ctx.eval({in});
    FAIL() << "expected an error about non-finite " << what;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(model), std::string::npos) << msg;
    EXPECT_NE(msg.find("non-finite " + what), std::string::npos) << msg;
  }
  // A failed pass leaves the cache as it was.
  EXPECT_EQ(ctx.n_past(in.seq), 0);
}

TEST(NonFinite, NanEpsilonFailsInTheEngine) {
  REQUIRE_SHARED(src, "fixtures/models/stories260K.gguf");
  const std::string model = nan_epsilon_model(src, ragform::testing::temp_dir("nan_eps"));
  expect_non_finite_error(model, "logits");
  expect_non_finite_error(model, "attention weights");
}

TEST(NonFinite, NanWeightsFailInTheEngine) {
  REQUIRE_SHARED(src, "fixtures/models/stories260K.gguf");
  const auto dir = ragform::testing::temp_dir("nan_weights");
  expect_non_finite_error(nan_tensor_model(src, dir, "blk.0.attn_norm.weight"),
                          "attention weights");
  // Only the final norm: attention is fine, the logits are not.
  const std::string out_norm = nan_tensor_model(src, dir, "output_norm.weight");
  expect_non_finite_error(out_norm, "logits");
}

TEST(NonFinite, CommandsExitWithAnErrorNamingTheModel) {
  REQUIRE_SHARED(src, "fixtures/models/stories260K.gguf");
  const auto dir = ragform::testing::temp_dir("nan_cli");
  const std::string model = nan_epsilon_model(src, dir);
  const std::string logits_out = (dir / "logits.bin").string();
  for (const std::string& cmd :
       {std::string("generate -n 4 --json"), std::string("attention --json"),
        "logits -o '" + logits_out + "'"}) {
    auto r = run_ragform(cmd + " -m '" + model + "' -p 'Once upon a time'");
    EXPECT_EQ(r.exit_code, 1) << cmd << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(model), std::string::npos) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("non-finite"), std::string::npos) << cmd << ": " << r.err;
  }
  // A finite model is untouched by the check.
  auto ok = run_ragform("generate -n 4 -m '" + src.string() + "' -p 'Once upon a time' --json");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

}  // namespace
}  // namespace ragform::runtime
