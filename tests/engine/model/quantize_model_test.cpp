// `ragform quantize` (quantize_model.h) on a small random-weight F32 model: every type and
// mixture round-trips (F32 -> T -> F32 within the error that T's stored block scales allow, T -> T
// and F32 -> F32 byte-identical), metadata is kept but for general.file_type, the output runs in
// the engine; and the refusals (IN == OUT, unknown type, unreadable or unwritable files,
// non-finite weights, tensor types the engine cannot read).
#include "engine/model/quantize_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "engine/gguf/gguf.h"
#include "engine/model/model.h"
#include "engine/model/random_model.h"
#include "engine/ops/fp16.h"
#include "engine/ops/quant_blocks.h"
#include "engine/runtime/context.h"
#include "support/test_support.h"

namespace ragform::model {
namespace {

namespace fs = std::filesystem;
using gguf::TensorType;

// The small shape with 2 layers: rows of 256 and 768 (K types fit without fallback), an untied
// output matrix, use_more_bits(i, 2) true for layer 1 only; ~2.1M weights.
const std::string& small_f32() {
  static const std::string path = [] {
    const fs::path dir = testing::temp_dir("quantize_model_small");
    RandomModelOptions o;
    o.shape = "small";
    o.layers = 2;
    o.type = "f32";
    o.out = (dir / "small-f32.gguf").string();
    write_random_model(o);
    return o.out;
  }();
  return path;
}

QuantizeSummary run(const std::string& in, const std::string& out, const std::string& type) {
  QuantizeOptions o;
  o.in = in;
  o.out = out;
  o.type = type;
  o.threads = 2;
  return quantize_model(o);
}

std::string value_bytes(const gguf::Value& v) {
  gguf::Writer w;
  w.set("k", v);
  return w.to_bytes();
}

float h2f(uint16_t h) { return ops::fp16_to_fp32(h); }

// The grid an element of a block-quantised row can take: values a + s*q for q in [qmin, qmax],
// read from the stored (f16) scales of the element's block or sub-block. `tol` covers what the
// quantiser computes from unrounded scales (Q4_0 ... Q8_0 divide by the f32 scale before it is
// stored as f16: up to |q| * |d| * 2^-11 more) and float rounding in the K types' divisions.
struct Grid {
  double s = 0, a = 0;
  int qmin = 0, qmax = 0;
  double tol = 0;
  // The grid point nearest to x.
  double nearest(double x) const {
    if (s == 0) return a;
    const double q = std::clamp(std::nearbyint((x - a) / s), double(qmin), double(qmax));
    return a + s * q;
  }
};

Grid grid_of(TensorType t, const uint8_t* row, int64_t j) {
  constexpr double kF16 = 1.0 / 2048;  // f16 relative rounding, 2^-11
  Grid g;
  auto simple = [&](double d, double a, int qmin, int qmax, double m) {
    g.s = d;
    g.a = a;
    g.qmin = qmin;
    g.qmax = qmax;
    g.tol = 2 * kF16 * (std::max(std::abs(qmin), std::abs(qmax)) * std::abs(d) + std::abs(m));
  };
  auto k_type = [&](double s, double a, int qmin, int qmax) {
    g.s = s;
    g.a = a;
    g.qmin = qmin;
    g.qmax = qmax;
    g.tol = 1e-5 * (std::abs(s) * std::max(-qmin, qmax) + std::abs(a));
  };
  switch (t) {
    case TensorType::Q4_0: {
      const auto* b = reinterpret_cast<const ops::BlockQ4_0*>(row) + j / 32;
      const double d = h2f(b->d);
      simple(d, -8 * d, 0, 15, 0);
      break;
    }
    case TensorType::Q5_0: {
      const auto* b = reinterpret_cast<const ops::BlockQ5_0*>(row) + j / 32;
      const double d = h2f(b->d);
      simple(d, -16 * d, 0, 31, 0);
      break;
    }
    case TensorType::Q4_1: {
      const auto* b = reinterpret_cast<const ops::BlockQ4_1*>(row) + j / 32;
      simple(h2f(b->d), h2f(b->m), 0, 15, h2f(b->m));
      break;
    }
    case TensorType::Q5_1: {
      const auto* b = reinterpret_cast<const ops::BlockQ5_1*>(row) + j / 32;
      simple(h2f(b->d), h2f(b->m), 0, 31, h2f(b->m));
      break;
    }
    case TensorType::Q8_0: {
      const auto* b = reinterpret_cast<const ops::BlockQ8_0*>(row) + j / 32;
      simple(h2f(b->d), 0, -127, 127, 0);
      break;
    }
    case TensorType::Q2_K: {
      const auto* b = reinterpret_cast<const ops::BlockQ2_K*>(row) + j / 256;
      const uint8_t sc = b->scales[(j % 256) / 16];
      k_type(double(h2f(b->d)) * (sc & 15), -double(h2f(b->dmin)) * (sc >> 4), 0, 3);
      break;
    }
    case TensorType::Q3_K: {
      const auto* b = reinterpret_cast<const ops::BlockQ3_K*>(row) + j / 256;
      int8_t sc[16];
      ops::unpack_q3_k_scales(b->scales, sc);
      k_type(double(h2f(b->d)) * sc[(j % 256) / 16], 0, -4, 3);
      break;
    }
    case TensorType::Q4_K:
    case TensorType::Q5_K: {
      const bool five = t == TensorType::Q5_K;
      const uint8_t* blk =
          row + size_t(j / 256) * (five ? sizeof(ops::BlockQ5_K) : sizeof(ops::BlockQ4_K));
      ops::BlockQ4_K head;  // d, dmin and scales lead both layouts
      std::memcpy(&head, blk, 4 + ops::K_SCALE_SIZE);
      uint8_t sc, m;
      ops::get_scale_min_k4(int((j % 256) / 32), head.scales, sc, m);
      k_type(double(h2f(head.d)) * sc, -double(h2f(head.dmin)) * m, 0, five ? 31 : 15);
      break;
    }
    case TensorType::Q6_K: {
      const auto* b = reinterpret_cast<const ops::BlockQ6_K*>(row) + j / 256;
      k_type(double(h2f(b->d)) * b->scales[(j % 256) / 16], 0, -32, 31);
      break;
    }
    default:
      ADD_FAILURE() << "no grid for " << gguf::type_name(t);
  }
  return g;
}

// The largest |x - y| an element may have, in steps |s| of its (sub-)block's grid: half a step
// where the grid spans the block's values (Q4_1 and Q5_1 from min to max, Q8_0 +-127 steps
// around the largest magnitude); one step for Q4_0/Q5_0, whose -8..7 (-16..15) steps leave the
// end opposite the largest magnitude one step short; for the K types half a step plus the
// overshoot of the widest trial scale of ggml's search, which maps a (sub-)block's range onto up
// to nmax + 1 steps (Q3_K, Q4_K: 1), nmax + 1.5 (Q5_K) or nmax + 0.9 on Q6_K's asymmetric
// -32..31 grid (1.4 with its short end), and half a step more for Q2_K's 4-bit scale and min
// codes (1 + 0.5).
double allowed_steps(TensorType t) {
  switch (t) {
    case TensorType::Q4_1:
    case TensorType::Q5_1:
    case TensorType::Q8_0:
      return 0.5;
    case TensorType::Q4_0:
    case TensorType::Q5_0:
      return 1.0;
    case TensorType::Q3_K:
    case TensorType::Q4_K:
      return 1.5;
    case TensorType::Q6_K:
      return 1.9;
    case TensorType::Q2_K:
    case TensorType::Q5_K:
      return 2.0;
    default:
      return 0;
  }
}

// |x - y| for every element of a tensor against the bound its type allows:
//   F32: 0; F16: half an ulp, |x| 2^-11 (2^-25 below F16's normal range); BF16: |x| 2^-8;
//   block types: y is the point of the element's grid (from the stored scales) nearest to x, up
//   to the grid's tol; and the error is at most allowed_steps(type) steps of that grid.
struct Worst {
  double excess = 0;      // largest |x - y| - (|x - nearest| + tol), or - the float bound
  double over_steps = 0;  // largest |x - y| - (allowed_steps |s| + tol)
  double in_steps = 0;    // largest |x - y| / |s| (block types) or / |x| (floats), for the log
};

Worst compare_tensor(const gguf::TensorInfo& q, const float* x, const float* y) {
  Worst w;
  const int64_t n = q.ne[0], rows = q.rows();
  const size_t row_bytes = gguf::row_bytes(q.type, n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      const double xv = x[r * n + j], yv = y[r * n + j], e = std::abs(xv - yv);
      double bound = 0;
      switch (q.type) {
        case TensorType::F32:
          break;
        case TensorType::F16:
          bound = std::max(std::abs(xv) / 2048, std::ldexp(1.0, -25));
          break;
        case TensorType::BF16:
          bound = std::abs(xv) / 256;
          break;
        default: {
          const Grid g = grid_of(q.type, q.data + size_t(r) * row_bytes, j);
          bound = std::abs(xv - g.nearest(xv)) + g.tol;
          w.over_steps =
              std::max(w.over_steps, e - (allowed_steps(q.type) * std::abs(g.s) + g.tol));
          if (g.s != 0) w.in_steps = std::max(w.in_steps, e / std::abs(g.s));
          break;
        }
      }
      if (q.type == TensorType::F16 || q.type == TensorType::BF16)
        w.in_steps = std::max(w.in_steps, e / std::max(std::abs(xv), 1e-30));
      w.excess = std::max(w.excess, e - bound);
    }
  return w;
}

// The types the recipe must give the small 2-layer model's weights, worked out by hand from
// llama.cpp's rules: {output, token_embd, attn_v 0, attn_v 1, ffn_down 0, ffn_down 1,
// attn_output, other weights}.
struct Expect {
  const char* scheme;
  TensorType output, embd, v0, v1, down0, down1, attn_out, other;
};
constexpr TensorType F32 = TensorType::F32, Q3K = TensorType::Q3_K, Q4K = TensorType::Q4_K,
                     Q5K = TensorType::Q5_K, Q6K = TensorType::Q6_K;
const Expect kMixtures[] = {
    {"q4_k_m", Q6K, Q4K, Q4K, Q6K, Q4K, Q6K, Q4K, Q4K},
    {"q5_k_m", Q6K, Q5K, Q5K, Q6K, Q5K, Q6K, Q5K, Q5K},
    {"q4_k_s", Q6K, Q4K, Q5K, Q5K, Q4K, Q4K, Q4K, Q4K},
    {"q5_k_s", Q6K, Q5K, Q5K, Q5K, Q5K, Q5K, Q5K, Q5K},
    {"q3_k_m", Q6K, Q3K, Q5K, Q5K, Q4K, Q4K, Q4K, Q3K},
};

TensorType expected_type(const WeightScheme& w, const gguf::TensorInfo& t) {
  if (t.ne.size() == 1) return F32;
  if (w.mix == Mixture::Pure) return w.base;
  for (const Expect& e : kMixtures)
    if (w.name == e.scheme) {
      const std::string& n = t.name;
      if (n == "output.weight") return e.output;
      if (n == "token_embd.weight") return e.embd;
      if (n == "blk.0.attn_v.weight") return e.v0;
      if (n == "blk.1.attn_v.weight") return e.v1;
      if (n == "blk.0.ffn_down.weight") return e.down0;
      if (n == "blk.1.ffn_down.weight") return e.down1;
      if (n.find("attn_output") != std::string::npos) return e.attn_out;
      return e.other;
    }
  ADD_FAILURE() << "no expectation for " << w.name;
  return F32;
}

std::vector<float> values(const gguf::TensorInfo& t) {
  std::vector<float> v(size_t(t.n_elements()));
  EXPECT_EQ(t.type, TensorType::F32) << t.name;
  std::memcpy(v.data(), t.data, v.size() * sizeof(float));
  return v;
}

// Every tensor of `q` (quantised from `f32`, dequantised again as `back`) within its type's bound.
void expect_within_bounds(const gguf::File& f32, const gguf::File& q, const gguf::File& back,
                          const std::string& label) {
  std::map<TensorType, Worst> worst;
  for (const auto& ti : q.tensors()) {
    const auto x = values(f32.tensor(ti.name)), y = values(back.tensor(ti.name));
    const Worst w = compare_tensor(ti, x.data(), y.data());
    EXPECT_LE(w.excess, 0.0) << ti.name << " (" << gguf::type_name(ti.type)
                             << "): an element is not at the nearest point of its grid";
    EXPECT_LE(w.over_steps, 0.0) << ti.name << " (" << gguf::type_name(ti.type) << "): error of "
                                 << w.in_steps << " steps";
    Worst& a = worst[ti.type];
    a.in_steps = std::max(a.in_steps, w.in_steps);
  }
  for (const auto& [tt, w] : worst)
    std::printf("[measured] %s: %s largest error %.4g %s\n", label.c_str(), gguf::type_name(tt),
                w.in_steps, gguf::type_info(tt).block_size > 1 ? "steps" : "x |x|");
}

class QuantizeRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(QuantizeRoundTrip, F32ToTypeToF32) {
  const std::string type = GetParam();
  const WeightScheme scheme = parse_scheme(type);
  const fs::path dir = testing::temp_dir("quantize_roundtrip_" + type);
  const std::string q = (dir / "q.gguf").string(), back = (dir / "back.gguf").string(),
                    again = (dir / "again.gguf").string();
  const QuantizeSummary sum = run(small_f32(), q, type);
  EXPECT_EQ(sum.scheme.file_type, scheme.file_type);
  EXPECT_EQ(sum.file_bytes_out, fs::file_size(q));
  EXPECT_FALSE(fs::exists(q + ".tmp"));

  auto f = gguf::File::open(small_f32());
  auto t = gguf::File::open(q);
  EXPECT_EQ(t->version(), 3u);
  EXPECT_EQ(t->get_int("general.file_type"), int64_t(scheme.file_type));
  // Metadata: IN's keys in IN's order, values unchanged, but general.file_type and a
  // quantization_version added when a block type is written.
  bool blocks = false;
  for (const auto& ti : t->tensors()) blocks |= gguf::type_info(ti.type).block_size > 1;
  std::vector<std::string> keys_in, keys_out;
  for (const auto& [k, v] : f->metadata()) {
    keys_in.push_back(k);
    if (k != "general.file_type") {
      EXPECT_EQ(value_bytes(v), value_bytes(t->get(k))) << k;
    }
  }
  for (const auto& [k, v] : t->metadata()) keys_out.push_back(k);
  if (blocks) keys_in.push_back("general.quantization_version");
  EXPECT_EQ(keys_out, keys_in);
  if (blocks) {
    EXPECT_EQ(t->get_int("general.quantization_version"), 2);
  }

  // Tensors: IN's names, shapes and order; the recipe's types.
  ASSERT_EQ(t->tensors().size(), f->tensors().size());
  for (size_t i = 0; i < f->tensors().size(); ++i) {
    EXPECT_EQ(t->tensors()[i].name, f->tensors()[i].name);
    EXPECT_EQ(t->tensors()[i].ne, f->tensors()[i].ne);
    EXPECT_EQ(t->tensors()[i].type, expected_type(scheme, f->tensors()[i]))
        << type << " " << f->tensors()[i].name;
  }

  // Back to F32: every element within its type's bound.
  run(q, back, "f32");
  auto b = gguf::File::open(back);
  EXPECT_EQ(b->get_int("general.file_type"), 0);
  expect_within_bounds(*f, *t, *b, type);

  // T -> T copies every tensor: the same file, byte for byte (F32 -> F32 included).
  const QuantizeSummary s2 = run(q, again, type);
  EXPECT_EQ(s2.n_converted, 0);
  EXPECT_EQ(testing::read_file(again), testing::read_file(q));
  if (type == "f32") {
    EXPECT_EQ(testing::read_file(q), testing::read_file(small_f32()));
  }

  // The engine loads the output and computes finite logits.
  auto m = Model::load(q);
  runtime::Context ctx(*m, {64, runtime::KvType::F32, nullptr, 2});
  runtime::SeqInput in;
  in.seq = ctx.new_sequence();
  in.tokens = {1, 300, 301, 302, 303};
  in.logits = runtime::LogitsMode::Last;
  const auto out = ctx.eval({in});
  ASSERT_EQ(out[0].logits.size(), size_t(m->hp().n_vocab));
  for (float v : out[0].logits) ASSERT_TRUE(std::isfinite(v));
}

INSTANTIATE_TEST_SUITE_P(EveryType, QuantizeRoundTrip, ::testing::ValuesIn(scheme_names()),
                         [](const auto& p) { return p.param; });

namespace refusals {

// A small GGUF of F32 tensors {name, ne, values} written by gguf::Writer (not a runnable model).
std::string write_f32(
    const fs::path& path,
    const std::vector<std::tuple<std::string, std::vector<int64_t>, std::vector<float>>>& tensors) {
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::str("llama"));
  w.set("llama.block_count", gguf::Value::u32(1));
  for (const auto& [name, ne, v] : tensors)
    w.add_tensor(name, ne, TensorType::F32, v.data(), v.size() * sizeof(float));
  w.write(path.string());
  return path.string();
}

std::vector<float> ramp(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(i % 17) * 0.25f - 2.0f;
  return v;
}

std::string error_of(const QuantizeOptions& o) {
  try {
    quantize_model(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace refusals

TEST(QuantizeModel, RowsThatFitNoBlockFallBack) {
  using refusals::ramp;
  const fs::path dir = testing::temp_dir("quantize_fallback");
  // 48 elements: no 32-block fits, so every block type becomes F16; 640 (Gemma 3 270M's rows): the
  // K types fall back to 32-blocks.
  const std::string in =
      refusals::write_f32(dir / "in.gguf", {{"blk.0.attn_q.weight", {48, 4}, ramp(192)},
                                            {"blk.0.ffn_up.weight", {640, 2}, ramp(1280)},
                                            {"blk.0.attn_norm.weight", {48}, ramp(48)}});
  const auto types = [&](const std::string& type) {
    const auto s = run(in, (dir / (type + ".gguf")).string(), type);
    std::vector<TensorType> v;
    for (const auto& t : s.tensors) v.push_back(t.to);
    return v;
  };
  using V = std::vector<TensorType>;
  EXPECT_EQ(types("q4_0"), (V{TensorType::F16, TensorType::Q4_0, F32}));
  EXPECT_EQ(types("q4_k_m"), (V{TensorType::F16, TensorType::Q5_0, F32}));
  EXPECT_EQ(types("q5_k"), (V{TensorType::F16, TensorType::Q5_1, F32}));
  EXPECT_EQ(types("q6_k"), (V{TensorType::F16, TensorType::Q8_0, F32}));
  EXPECT_EQ(types("q2_k"), (V{TensorType::F16, TensorType::Q4_0, F32}));
  EXPECT_EQ(types("bf16"), (V{TensorType::BF16, TensorType::BF16, F32}));
  // The fallback types round-trip within their bounds too.
  run((dir / "q6_k.gguf").string(), (dir / "back.gguf").string(), "f32");
  auto f = gguf::File::open(in), q = gguf::File::open((dir / "q6_k.gguf").string()),
       b = gguf::File::open((dir / "back.gguf").string());
  expect_within_bounds(*f, *q, *b, "fallback q6_k");
}

TEST(QuantizeModel, TinyModelQ4_K_MFallsBackAndRuns) {
  // The tiny shape's rows are 64 (n_embd) and 192 (n_ff) long: no K block fits anywhere.
  const fs::path dir = testing::temp_dir("quantize_tiny");
  RandomModelOptions r;
  r.shape = "tiny";
  r.type = "f32";
  r.out = (dir / "tiny.gguf").string();
  write_random_model(r);
  const std::string q = (dir / "q.gguf").string();
  run(r.out, q, "q4_k_m");
  auto t = gguf::File::open(q);
  EXPECT_EQ(t->tensor("output.weight").type, TensorType::Q8_0);  // output rule, 64 % 256 != 0
  EXPECT_EQ(t->tensor("token_embd.weight").type, TensorType::Q5_0);
  EXPECT_EQ(t->tensor("blk.0.attn_v.weight").type, TensorType::Q5_0);
  EXPECT_EQ(t->tensor("blk.1.attn_v.weight").type, TensorType::Q8_0);  // Q6_K -> Q8_0
  EXPECT_EQ(t->tensor("blk.1.ffn_down.weight").type, TensorType::Q8_0);
  EXPECT_EQ(t->get_int("general.file_type"), 15);
  run(q, (dir / "back.gguf").string(), "f32");
  auto f = gguf::File::open(r.out), b = gguf::File::open((dir / "back.gguf").string());
  expect_within_bounds(*f, *t, *b, "tiny q4_k_m");
  auto m = Model::load(q);
  EXPECT_TRUE(m->warnings().empty());
}

TEST(QuantizeModel, DryRunWritesNothing) {
  const fs::path dir = testing::temp_dir("quantize_dry");
  QuantizeOptions o;
  o.in = small_f32();
  o.out = (dir / "never.gguf").string();
  o.type = "q4_k_m";
  o.dry_run = true;
  const QuantizeSummary dry = quantize_model(o);
  EXPECT_FALSE(fs::exists(o.out));
  EXPECT_FALSE(fs::exists(o.out + ".tmp"));
  const QuantizeSummary real = run(o.in, o.out, "q4_k_m");
  EXPECT_EQ(dry.file_bytes_out, real.file_bytes_out);
  EXPECT_EQ(dry.type_counts, real.type_counts);
  EXPECT_EQ(real.n_converted + real.n_copied, int(real.tensors.size()));
}

TEST(QuantizeModel, Refusals) {
  using refusals::error_of;
  const fs::path dir = testing::temp_dir("quantize_refusals");
  QuantizeOptions o;
  o.in = small_f32();
  o.type = "q8_0";
  auto has = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };

  o.out = o.in;  // the same path
  EXPECT_THROW(quantize_model(o), UsageError);
  EXPECT_TRUE(has(error_of(o), "is the input file")) << error_of(o);
  fs::create_hard_link(o.in, dir / "link.gguf");  // the same file by another name
  o.out = (dir / "link.gguf").string();
  EXPECT_TRUE(has(error_of(o), "is the input file")) << error_of(o);

  o.out = (dir / "out.gguf").string();
  o.type = "q4_k_xl";
  EXPECT_THROW(quantize_model(o), UsageError);
  EXPECT_TRUE(has(error_of(o), "unknown --type 'q4_k_xl' (accepted: f32, f16, bf16, q8_0"))
      << error_of(o);
  o.type = "q8_0";

  o.in = (dir / "missing.gguf").string();
  EXPECT_THROW(quantize_model(o), FileError);
  EXPECT_TRUE(has(error_of(o), "missing.gguf: no such file")) << error_of(o);
  o.in = small_f32();

  o.out = (dir / "no" / "such" / "dir" / "out.gguf").string();
  EXPECT_THROW(quantize_model(o), FileError);
  EXPECT_TRUE(has(error_of(o), "cannot create")) << error_of(o);

  // A NaN where a block type needs a scale: the error names tensor and row, and neither OUT nor
  // its temporary file is left behind.
  std::vector<float> v = refusals::ramp(64);
  v[40] = std::nanf("");
  o.in = refusals::write_f32(
      dir / "nan.gguf",
      {{"blk.0.attn_k.weight", {64, 2}, refusals::ramp(128)}, {"blk.0.attn_q.weight", {32, 2}, v}});
  o.out = (dir / "nan-q8.gguf").string();
  const std::string e = error_of(o);
  EXPECT_TRUE(has(e, "tensor 'blk.0.attn_q.weight' (f32 -> q8_0): row 1: element 8")) << e;
  EXPECT_FALSE(fs::exists(o.out));
  EXPECT_FALSE(fs::exists(o.out + ".tmp"));
  o.type = "f32";  // F32 -> F32 copies the bits, NaN included
  EXPECT_NO_THROW(quantize_model(o));

  // A tensor type the engine cannot read (IQ4_NL, id 20): the reader names the tensor.
  std::string bytes = testing::read_file(dir / "nan.gguf");
  const std::string name = "blk.0.attn_q.weight";
  const size_t at = bytes.find(name) + name.size() + 4 + 2 * 8;  // n_dims, ne[2], then the type
  const uint32_t iq4_nl = 20;
  std::memcpy(&bytes[at], &iq4_nl, 4);
  testing::write_file(dir / "iq.gguf", bytes);
  o.in = (dir / "iq.gguf").string();
  o.out = (dir / "iq-out.gguf").string();
  const std::string e2 = error_of(o);
  EXPECT_TRUE(has(e2, "tensor 'blk.0.attn_q.weight'") && has(e2, "unsupported tensor type id 20"))
      << e2;
}

}  // namespace
}  // namespace ragform::model
