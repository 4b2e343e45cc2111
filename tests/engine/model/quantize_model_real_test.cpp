// `ragform quantize` on the trained Gemma 3 270M Q4_K_M (RAGFORM_GEMMA, from scripts/models.sh):
//   - Q4_K_M -> f32 holds exactly the dequantised weights (every element, bit for bit), keeps the
//     metadata, and the engine's top token on each prompt is the Q4_K_M file's;
//   - f32 -> q4_k_m chooses, for every tensor, the type llama-quantize chose for the shipped file
//     (its Q5_0/Q8_0 fallbacks on the 640-long rows included), with the same file size and
//     metadata. The bytes of the re-quantised K-type tensors need not be the shipped ones:
//     quantising dequantised Q4_K/Q6_K blocks again does not always find the same scales. (Ours
//     equal llama-quantize's run on the same F32 file, tensor for tensor: docs/engine.md.)
// Writes a 1.08 GB F32 file under the build tree, removed at the end; ~20 s on 2 cores.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "engine/gguf/gguf.h"
#include "engine/model/model.h"
#include "engine/model/quantize_model.h"
#include "engine/ops/ops.h"
#include "engine/runtime/context.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/real_models.h"
#include "support/test_support.h"

namespace ragform::model {
namespace {

namespace fs = std::filesystem;

struct RemoveOnExit {
  fs::path dir;
  ~RemoveOnExit() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

std::string value_bytes(const gguf::Value& v) {
  gguf::Writer w;
  w.set("k", v);
  return w.to_bytes();
}

// The engine's greedy next token after each prompt, and the last position's logits.
std::vector<std::pair<int, std::vector<float>>> next_tokens(const std::string& path,
                                                            const std::vector<std::string>& ps) {
  auto m = Model::load(path);
  auto tk = tok::Tokenizer::from_gguf(m->file());
  std::vector<std::pair<int, std::vector<float>>> out;
  for (const auto& p : ps) {
    runtime::Context ctx(*m, {256, runtime::KvType::F32, nullptr, 2});
    runtime::SeqInput in;
    in.seq = ctx.new_sequence();
    in.tokens = tk->encode(p, true, false);
    in.logits = runtime::LogitsMode::Last;
    auto r = ctx.eval({in});
    const auto& l = r[0].logits;
    out.emplace_back(int(std::max_element(l.begin(), l.end()) - l.begin()), l);
  }
  return out;
}

TEST(QuantizeModelReal, Gemma3Q4_K_M_ToF32AndBack) {
  REQUIRE_REAL_MODEL(gemma, "RAGFORM_GEMMA");
  const RemoveOnExit tmp{testing::temp_dir("quantize_real")};
  const std::string f32 = (tmp.dir / "gemma-f32.gguf").string(),
                    q4 = (tmp.dir / "gemma-q4_k_m.gguf").string();
  QuantizeOptions o;
  o.in = gemma;
  o.out = f32;
  o.type = "f32";
  o.threads = 2;
  const QuantizeSummary s = quantize_model(o);
  EXPECT_EQ(s.n_converted, 127);  // every 2-D weight; the 109 norms are F32 already
  EXPECT_EQ(s.n_copied, 109);

  auto shipped = gguf::File::open(gemma);
  {
    auto f = gguf::File::open(f32);
    EXPECT_EQ(f->get_int("general.file_type"), 0);
    for (const auto& [k, v] : shipped->metadata())
      if (k != "general.file_type") {
        EXPECT_EQ(value_bytes(v), value_bytes(f->get(k))) << k;
      }
    // Every element is the shipped tensor's dequantised value, bit for bit.
    std::vector<float> row;
    for (const auto& t : shipped->tensors()) {
      const auto& u = f->tensor(t.name);
      ASSERT_EQ(u.type, gguf::TensorType::F32) << t.name;
      ASSERT_EQ(u.ne, t.ne) << t.name;
      const int64_t n = t.ne[0];
      row.resize(size_t(n));
      const size_t in_row = gguf::row_bytes(t.type, n);
      int64_t bad = -1;
      for (int64_t r = 0; r < t.rows() && bad < 0; ++r) {
        ops::dequantize_row(t.type, t.data + size_t(r) * in_row, row.data(), n);
        if (std::memcmp(row.data(), u.data + size_t(r * n) * 4, size_t(n) * 4) != 0) bad = r;
      }
      EXPECT_EQ(bad, -1) << t.name << ": row " << bad << " is not the dequantised row";
    }
  }

  // The engine on the F32 copy picks the Q4_K_M file's next token (the Q4_K_M run quantises its
  // activations to 8 bits, the F32 run does not: logits differ a little, the argmax must not).
  const std::vector<std::string> prompts = {
      "The capital of France is",
      "Question: What is the largest planet in the solar system?\n"
      "Answer:",
      "def fibonacci(n):\n    if n < 2:\n        return n\n    return"};
  const auto a = next_tokens(gemma, prompts), b = next_tokens(f32, prompts);
  for (size_t i = 0; i < prompts.size(); ++i) {
    double dmax = 0;
    for (size_t v = 0; v < a[i].second.size(); ++v)
      dmax = std::max(dmax, double(std::abs(a[i].second[v] - b[i].second[v])));
    std::printf("[measured] prompt %zu: top token %d (Q4_K_M) / %d (F32 copy), max |dlogit| %.4g\n",
                i, a[i].first, b[i].first, dmax);
    EXPECT_EQ(a[i].first, b[i].first) << prompts[i];
  }

  // F32 -> q4_k_m: llama-quantize's choice for every tensor of the shipped file.
  o.in = f32;
  o.out = q4;
  o.type = "q4_k_m";
  const QuantizeSummary back = quantize_model(o);
  auto q = gguf::File::open(q4);
  EXPECT_EQ(q->file_size(), shipped->file_size());
  EXPECT_EQ(q->get_int("general.file_type"), 15);
  int same_bytes = 0;
  for (const auto& t : shipped->tensors()) {
    const auto& u = q->tensor(t.name);
    EXPECT_EQ(gguf::type_name(u.type), std::string(gguf::type_name(t.type))) << t.name;
    same_bytes += u.n_bytes == t.n_bytes && std::memcmp(u.data, t.data, t.n_bytes) == 0;
  }
  for (const auto& [k, v] : shipped->metadata()) EXPECT_EQ(value_bytes(v), value_bytes(q->get(k)));
  std::printf(
      "[measured] f32 -> q4_k_m: %d of %zu tensors byte-identical to the shipped file; "
      "types %s\n",
      same_bytes, shipped->tensors().size(),
      [&] {
        std::string t;
        for (const auto& [k, v] : back.type_counts)
          t += (t.empty() ? "" : ", ") + std::to_string(v) + " " + k;
        return t;
      }()
          .c_str());
}

}  // namespace
}  // namespace ragform::model
