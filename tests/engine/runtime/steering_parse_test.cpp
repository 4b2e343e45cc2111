// The steering types (runtime/steering.h): the CLI syntax, the steering object every front end
// gives (reader/steering_object.h) and its refusals by key, layer resolution, character-to-token
// span mapping, the stable keys, and the rules on one softmax row, rescale against PASTA's own
// computation (pastalib) and redistribute against Found in the Middle's eq. 5-6.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "engine/runtime/steering.h"
#include "reader/steering_object.h"

namespace ragform::runtime {
namespace {

TEST(SteeringParse, Rules) {
  SteeringSpec s;
  parse_steer_rule("rescale:2.5", s, "--steer");
  EXPECT_EQ(s.rule, Steering::Rescale);
  EXPECT_FLOAT_EQ(s.value, 2.5f);
  parse_steer_rule("reallocate:0.25", s, "--steer");
  EXPECT_EQ(s.rule, Steering::Reallocate);
  EXPECT_FLOAT_EQ(s.value, 0.25f);
  parse_steer_rule("off", s, "--steer");
  EXPECT_EQ(s.rule, Steering::Off);
  for (const char* bad : {"rescale", "rescale:", "rescale:x", "rescale:-1", "reallocate:1.5",
                          "boost:2", "rescale:inf", "rescale:2x"})
    EXPECT_THROW(parse_steer_rule(bad, s, "--steer"), UsageError) << bad;
  try {
    parse_steer_rule("reallocate:2", s, "--steer");
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "--steer: the reallocated share must be within 0..1, got 2");
  }
}

TEST(SteeringParse, CharSpans) {
  auto v = parse_char_spans("0:10,20:25", "--steer-spans");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0], (CharSpan{0, 10}));
  EXPECT_EQ(v[1], (CharSpan{20, 25}));
  for (const char* bad : {"", "5", "5:5", "9:3", "-1:4", "a:b", "1:2,", "1:2:3"})
    EXPECT_THROW(parse_char_spans(bad, "--steer-spans"), UsageError) << bad;
}

TEST(SteeringParse, LayerListsAndResolution) {
  auto r = parse_layer_list("0,2..3,-1,4-5,-3..-2", "--steer-layers");
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[1], (LayerRange{2, 3}));
  EXPECT_EQ(r[2], (LayerRange{-1, -1}));
  EXPECT_EQ(r[3], (LayerRange{4, 5}));
  EXPECT_EQ(r[4], (LayerRange{-3, -2}));
  EXPECT_EQ(resolve_layers(r, 8), (std::vector<int>{0, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(resolve_layers({}, 5), (std::vector<int>{2, 3, 4}));  // floor(5/2)..4
  EXPECT_EQ(resolve_layers({}, 1), (std::vector<int>{0}));
  EXPECT_THROW(resolve_layers({{8, 8}}, 8), UsageError);
  EXPECT_THROW(resolve_layers({{-9, -9}}, 8), UsageError);
  EXPECT_THROW(resolve_layers({{3, 1}}, 8), UsageError);
  for (const char* bad : {"", "a", "1..", "..2", "1,,2", "--1"})
    EXPECT_THROW(parse_layer_list(bad, "--steer-layers"), UsageError) << bad;
  EXPECT_EQ(parse_head_list("3,1,3", "--steer-heads"), (std::vector<int>{1, 3}));
  EXPECT_THROW(parse_head_list("-1", "--steer-heads"), UsageError);
}

// One parser of the steering object for the CLI's flags, the server's "steer" field and Python's
// dict: the shapes each accepted before, and every refusal named by the object's key (with the
// kind of problem the server's error code tells), spelled by each front end its own way.
TEST(SteeringObject, ReadsEveryFrontEndsShapesAndNamesTheKeyOfARefusal) {
  using nlohmann::json;
  using reader::parse_steering;
  EXPECT_FALSE(parse_steering(json()).active());
  EXPECT_FALSE(parse_steering(json{{"rule", "off"}}).active());  // off needs no spans
  SteeringSpec s = parse_steering(
      json{{"rule", "reallocate:0.75"}, {"spans", {{48, 57}, {0, 4}}}, {"layers", "-2..-1"}});
  EXPECT_EQ(s.describe(), "reallocate:0.75|chars=48:57,0:4|layers=-2..-1|heads=all");
  s = parse_steering(
      json{{"rule", "rescale:2"}, {"spans", {{0, 4}}}, {"layers", {3, -1}}, {"heads", {2, 0}}});
  EXPECT_EQ(s.layers, (std::vector<LayerRange>{{3, 3}, {-1, -1}}));
  EXPECT_EQ(s.heads, (std::vector<int>{2, 0}));  // as given; resolve_steering sorts them
  s = parse_steering(
      json{{"rule", "rescale:2"}, {"spans", {{0, 4}}}, {"layers", nullptr}, {"heads", nullptr}});
  EXPECT_TRUE(s.layers.empty() && s.heads.empty());

  using P = SteerError::Problem;
  struct Bad {
    json object;
    std::string key;
    P problem;
    std::string why;
  };
  const json spans = {{0, 4}};
  const std::vector<Bad> bad = {
      {"rescale:2", "", P::type, "expected an object {rule, spans, layers, heads}"},
      {{{"rule", "rescale:2"}, {"spans", spans}, {"head", {1}}},
       "",
       P::unknown,  // the server's unknown_field (pass 18: it was invalid_value)
       "unknown key 'head' (rule, spans, layers, heads)"},
      {{{"spans", spans}}, "rule", P::missing, "missing: rescale:FACTOR"},
      {{{"rule", 2}, {"spans", spans}}, "rule", P::type, "expected a string, got 2"},
      {{{"rule", "boost:2"}, {"spans", spans}}, "rule", P::value, "expected rescale:FACTOR"},
      {{{"rule", "rescale:2"}}, "rule", P::missing, "needs steer.spans"},
      {{{"rule", "rescale:2"}, {"spans", json::array()}}, "spans", P::type, "expected a non-empty"},
      {{{"rule", "rescale:2"}, {"spans", "0:4"}}, "spans", P::type, "expected a non-empty"},
      {{{"rule", "rescale:2"}, {"spans", {{4, 4}}}}, "spans", P::value, "start below end, got"},
      {{{"rule", "rescale:2"}, {"spans", {{-1, 4}}}}, "spans", P::value, "start below end, got"},
      {{{"rule", "rescale:2"}, {"spans", {{0, 4, 5}}}}, "spans", P::value, "got [0,4,5]"},
      {{{"rule", "rescale:2"}, {"spans", spans}, {"layers", "1..x"}},
       "layers",
       P::value,
       "expected a layer range A..B"},
      {{{"rule", "rescale:2"}, {"spans", spans}, {"layers", {4294967296LL}}},
       "layers",
       P::value,
       "a layer index is an int, got 4294967296"},
      {{{"rule", "rescale:2"}, {"spans", spans}, {"layers", 3}},
       "layers",
       P::type,
       "expected layer indices"},
      {{{"rule", "rescale:2"}, {"spans", spans}, {"heads", {-1}}},
       "heads",
       P::value,
       "head indices are 0, 1, ..., got -1"},
      {{{"rule", "rescale:2"}, {"spans", spans}, {"heads", {"1"}}},
       "heads",
       P::type,
       "expected a list of head indices"},
      // Pass 20: an empty list steered every head (and the default layers), where the CLI
      // refuses an empty --steer-heads.
      {{{"rule", "rescale:2"}, {"spans", spans}, {"heads", json::array()}},
       "heads",
       P::value,
       "at least one"},
      {{{"rule", "rescale:2"}, {"spans", spans}, {"layers", json::array()}},
       "layers",
       P::value,
       "at least one"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.object.dump());
    try {
      parse_steering(b.object);
      ADD_FAILURE() << "accepted";
    } catch (const SteerError& e) {
      EXPECT_EQ(e.key(), b.key);
      EXPECT_EQ(e.problem(), b.problem);
      const std::string server =
          e.spelled([](const std::string& k) { return k.empty() ? "steer" : "steer." + k; });
      EXPECT_NE(server.find(b.why), std::string::npos) << server;
      EXPECT_EQ(server.find("{"), server.find("{rule")) << server;  // every {key} spelled
    }
  }
  // A message naming a second key spells it too; what() is the plain form.
  try {
    parse_steering(json{{"rule", "rescale:2"}});
  } catch (const SteerError& e) {
    EXPECT_EQ(std::string(e.what()), "rule: needs spans (the prompt's byte ranges to steer)");
    EXPECT_EQ(
        e.spelled([](const std::string& k) { return k == "rule" ? "--steer" : "--steer-" + k; }),
        "--steer: needs --steer-spans (the prompt's byte ranges to steer)");
  }
}

TEST(SteeringResolve, TokenSpansFromCharacters) {
  // "<s>" (no bytes), "The" [0,3), " cat" [3,7), " sat" [7,11), "." [11,12)
  std::vector<CharSpan> tb{{0, 0}, {0, 3}, {3, 7}, {7, 11}, {11, 12}};
  // A span touching one byte of a token takes the whole token; BOS never.
  EXPECT_EQ(token_spans_for(tb, {{0, 1}}, 0), (std::vector<TokenSpan>{{1, 2}}));
  EXPECT_EQ(token_spans_for(tb, {{2, 4}}, 0), (std::vector<TokenSpan>{{1, 3}}));
  // One token span per character span, in their order (per-span shares pair with them); a span
  // no token reaches is {0, 0}.
  EXPECT_EQ(token_spans_for(tb, {{11, 12}, {3, 4}, {20, 30}}, 0),
            (std::vector<TokenSpan>{{4, 5}, {2, 3}, {0, 0}}));
  EXPECT_EQ(token_spans_for(tb, {{0, 4}, {4, 8}}, 0), (std::vector<TokenSpan>{{1, 3}, {2, 4}}));
  // resolve_steering merges adjacent and overlapping spans for the union form.
  SteeringSpec spec;
  spec.rule = Steering::Reallocate;
  spec.value = 0.5f;
  spec.spans = {{0, 4}, {4, 8}};
  EXPECT_EQ(resolve_steering(spec, 4, 2, token_spans_for(tb, spec.spans, 0), 64).spans,
            (std::vector<TokenSpan>{{1, 4}}));
  // Offsets are into the user's prompt, which starts at byte 3 of the tokenised text here.
  EXPECT_EQ(token_spans_for(tb, {{0, 1}}, 3), (std::vector<TokenSpan>{{2, 3}}));
}

TEST(SteeringResolve, KeysAndActivity) {
  SteeringSpec spec;
  spec.spans = {{0, 4}};
  EXPECT_FALSE(spec.active());  // rule off
  EXPECT_EQ(spec.describe(), "off");
  spec.rule = Steering::Rescale;
  spec.value = 1.0f;
  EXPECT_FALSE(spec.active());  // rescale:1 changes nothing
  spec.value = 2.0f;
  EXPECT_TRUE(spec.active());
  EXPECT_EQ(spec.describe(), "rescale:2|chars=0:4|layers=default|heads=all|rows=pasta");
  Steering s = resolve_steering(spec, 4, 2, {{3, 5}, {1, 2}}, 64);
  EXPECT_TRUE(s.active());
  EXPECT_EQ(s.key(), "rescale:2|spans=1:2,3:5|layers=2,3|heads=all|prompt=64");
  EXPECT_EQ(s.prompt_end, 64);
  spec.heads = {1, 0};  // every head: written as all
  EXPECT_EQ(resolve_steering(spec, 4, 2, {{1, 2}}, 64).key(),
            "rescale:2|spans=1:2|layers=2,3|heads=all|prompt=64");
  spec.heads = {1};
  spec.value = 0.1f;
  spec.rule = Steering::Reallocate;
  spec.layers = {{-1, -1}};
  EXPECT_EQ(resolve_steering(spec, 4, 2, {{1, 2}}, 64).key(),
            "reallocate:0.1|spans=1:2|layers=3|heads=1");
  EXPECT_THROW(resolve_steering(spec, 4, 1, {{1, 2}}, 64), UsageError);  // head 1 of 1
  EXPECT_EQ(resolve_steering(SteeringSpec{}, 4, 2, {{1, 2}}, 64).key(), "");
}

TEST(SteeringRow, RescaleAndReallocate) {
  Steering s;
  s.spans = {{1, 3}};
  s.layers = {0};
  const std::vector<float> w0{0.1f, 0.2f, 0.3f, 0.4f};
  // Rescale by 2: span mass 0.5 -> 1.0, row sum 1.5.
  s.rule = Steering::Rescale;
  s.value = 2.0f;
  std::vector<float> w = w0;
  steer_row(s, 3, w.data(), 4);
  EXPECT_NEAR(w[0], 0.1 / 1.5, 1e-7);
  EXPECT_NEAR(w[1], 0.4 / 1.5, 1e-7);
  EXPECT_NEAR(w[2], 0.6 / 1.5, 1e-7);
  EXPECT_NEAR(w[3], 0.4 / 1.5, 1e-7);
  EXPECT_NEAR(std::accumulate(w.begin(), w.end(), 0.0), 1.0, 1e-6);
  // PASTA steers a query inside the span too (pastalib's mask covers every query row): at
  // position 1 it sees key 0 (outside) and key 1 (inside).
  {
    // 0.25 outside, 0.75 inside -> 0.25 : 1.5, over 1.75.
    std::vector<float> r2{0.25f, 0.75f};
    steer_row(s, 1, r2.data(), 2);
    EXPECT_NEAR(r2[0], 0.25 / 1.75, 1e-7);
    EXPECT_NEAR(r2[1], 1.5 / 1.75, 1e-7);
  }
  // A query before every span (position 0) sees only keys outside: unchanged, bit for bit.
  {
    std::vector<float> r1{1.0f};
    steer_row(s, 0, r1.data(), 1);
    EXPECT_EQ(r1[0], 1.0f);
  }
  // Reallocate 0.8 to the span: span mass 0.5 -> 0.8, rest 0.5 -> 0.2.
  s.rule = Steering::Reallocate;
  s.value = 0.8f;
  w = w0;
  steer_row(s, 3, w.data(), 4);
  EXPECT_NEAR(w[1] + w[2], 0.8, 1e-6);
  EXPECT_NEAR(w[0] + w[3], 0.2, 1e-6);
  EXPECT_NEAR(w[1] / w[2], 2.0 / 3.0, 1e-6);
  // No mass outside the span: nothing to move, the row stays.
  const std::vector<float> all_in{0.0f, 0.5f, 0.5f, 0.0f};
  w = all_in;
  steer_row(s, 3, w.data(), 4);
  EXPECT_EQ(w, all_in);
}

}  // namespace
}  // namespace ragform::runtime

namespace ragform::runtime {
namespace {

TEST(SteeringPerSpan, ParsesOneShareEach) {
  SteeringSpec spec;
  parse_steer_rule("reallocate:0.1,0.2,0.7", spec, "--steer");
  EXPECT_EQ(spec.rule, Steering::Reallocate);
  EXPECT_EQ(spec.shares, (std::vector<float>{0.1f, 0.2f, 0.7f}));
  spec.spans = {{0, 5}, {5, 9}, {20, 30}};
  EXPECT_EQ(spec.describe(), "reallocate:0.1,0.2,0.7|chars=0:5,5:9,20:30|layers=default|heads=all");
  // One value is the union form, as before.
  parse_steer_rule("reallocate:0.4", spec, "--steer");
  EXPECT_TRUE(spec.shares.empty());
  EXPECT_EQ(spec.value, 0.4f);
  for (const char* bad : {"reallocate:0.5,0.6", "reallocate:0.5,", "reallocate:-0.1,0.2",
                          "rescale:2,3", "reallocate:0.2,1.5"})
    EXPECT_THROW(parse_steer_rule(bad, spec, "--steer"), UsageError) << bad;
}

TEST(SteeringPerSpan, ResolvesSpansApartWithTheirShares) {
  SteeringSpec spec;
  parse_steer_rule("reallocate:0.3,0.2,0.1", spec, "--steer");
  spec.spans = {{40, 50}, {0, 10}, {60, 70}};
  // Given out of order, adjacent (10..20 then 20..30 in tokens) and one overlapping its
  // neighbour by a token: sorted, kept apart, the shared token with the earlier span.
  const Steering s = resolve_steering(spec, 4, 2, {{20, 30}, {10, 20}, {29, 35}}, 64);
  EXPECT_EQ(s.spans, (std::vector<TokenSpan>{{10, 20}, {20, 30}, {30, 35}}));
  EXPECT_EQ(s.shares, (std::vector<float>{0.2f, 0.3f, 0.1f}));
  EXPECT_EQ(s.key(), "reallocate:0.2,0.3,0.1|spans=10:20,20:30,30:35|layers=2,3|heads=all");
  // A span no token reaches drops out with its share.
  const Steering t = resolve_steering(spec, 4, 2, {{20, 30}, {0, 0}, {40, 41}}, 64);
  EXPECT_EQ(t.spans, (std::vector<TokenSpan>{{20, 30}, {40, 41}}));
  EXPECT_EQ(t.shares, (std::vector<float>{0.3f, 0.1f}));
  // One share per span.
  EXPECT_THROW(resolve_steering(spec, 4, 2, {{0, 5}, {6, 9}}, 64), UsageError);
}

TEST(SteeringPerSpan, RowGetsEachSpanItsShare) {
  Steering s;
  s.rule = Steering::Reallocate;
  s.spans = {{1, 3}, {3, 4}, {6, 8}};
  s.shares = {0.5f, 0.25f, 0.2f};
  s.layers = {0};
  std::vector<float> w(8, 0.125f);
  // At position 6 the third span has not ended: spans 1 and 2 take 0.5 and 0.25, the other five
  // keys (the third span's among them) share 0.25.
  steer_row(s, 6, w.data(), 7);
  EXPECT_FLOAT_EQ(w[1] + w[2], 0.5f);
  EXPECT_FLOAT_EQ(w[3], 0.25f);
  EXPECT_FLOAT_EQ(w[0] + w[4] + w[5] + w[6], 0.25f);
  EXPECT_FLOAT_EQ(w[0], w[6]);
  // With no mass in a span its share is not given: the rest takes 1 - 0.5 - 0.2.
  std::vector<float> v{0.2f, 0.1f, 0.1f, 0.0f, 0.2f, 0.1f, 0.2f, 0.1f};
  steer_row(s, 8, v.data(), 8);
  EXPECT_FLOAT_EQ(v[1] + v[2], 0.5f);
  EXPECT_EQ(v[3], 0.0f);
  EXPECT_FLOAT_EQ(v[6] + v[7], 0.2f);
  EXPECT_NEAR(v[0] + v[4] + v[5], 0.3f, 1e-6);
}

}  // namespace
}  // namespace ragform::runtime

namespace ragform::runtime {
namespace {

// softmax of x in double, as floats.
std::vector<float> softmax_of(const std::vector<double>& x) {
  double mx = -1e300, z = 0.0;
  for (double v : x) mx = std::max(mx, v);
  for (double v : x) z += std::exp(v - mx);
  std::vector<float> out;
  for (double v : x) out.push_back(float(std::exp(v - mx) / z));
  return out;
}

// PASTA as pastalib's edit_multisection_attention computes it, written from its definition: log
// alpha added to the scores of the prompt's keys outside the section ([0, ti) and [tj, L)), keys
// at or past the prompt length L untouched, then the softmax; every query row.
std::vector<float> pasta_row(const std::vector<double>& scores, int ti, int tj, int L,
                             double alpha) {
  std::vector<double> m = scores;
  for (int j = 0; j < int(m.size()); ++j)
    if (j < L && (j < ti || j >= tj)) m[size_t(j)] += std::log(alpha);
  return softmax_of(m);
}

TEST(SteeringPasta, RescaleIsPastaOnEveryRowAndLeavesGeneratedKeys) {
  // Scores of a 12-key row; span [3, 6), prompt of 9 tokens (keys 9..11 are generated).
  const std::vector<double> scores{0.3, -1.2, 2.0, 0.7, 1.1, -0.4, 0.9, 0.2, -2.0, 1.5, 0.1, 0.6};
  Steering s;
  s.rule = Steering::Rescale;
  s.value = 4.0f;  // PASTA's alpha = 1/4
  s.spans = {{3, 6}};
  s.layers = {0};
  s.prompt_end = 9;
  // Rows before the span, inside it, after it, and decode rows.
  for (int n = 1; n <= 12; ++n) {
    const std::vector<double> x(scores.begin(), scores.begin() + n);
    std::vector<float> w = softmax_of(x);
    steer_row(s, n - 1, w.data(), n);
    const std::vector<float> want = pasta_row(x, 3, 6, 9, 0.25);
    for (int j = 0; j < n; ++j) EXPECT_NEAR(w[size_t(j)], want[size_t(j)], 2e-7) << n << " " << j;
  }
  // The row before the span is not touched at all.
  std::vector<float> w = softmax_of({0.3, -1.2, 2.0});
  const std::vector<float> before = w;
  steer_row(s, 2, w.data(), 3);
  EXPECT_EQ(w, before);
}

TEST(SteeringRedistribute, ParsesWeightsAndKeysThem) {
  SteeringSpec spec;
  parse_steer_rule("redistribute:0.5,0,2.5", spec, "--steer");
  EXPECT_EQ(spec.rule, Steering::Redistribute);
  EXPECT_EQ(spec.shares, (std::vector<float>{0.5f, 0.0f, 2.5f}));
  spec.spans = {{0, 5}, {5, 9}, {20, 30}};
  EXPECT_TRUE(spec.active());
  EXPECT_EQ(spec.describe(), "redistribute:0.5,0,2.5|chars=0:5,5:9,20:30|layers=default|heads=all");
  const Steering s = resolve_steering(spec, 4, 2, {{1, 3}, {3, 5}, {8, 9}}, 10);
  EXPECT_EQ(s.key(), "redistribute:0.5,0,2.5|spans=1:3,3:5,8:9|layers=2,3|heads=all");
  EXPECT_THROW(resolve_steering(spec, 4, 2, {{1, 3}}, 10), UsageError);  // one weight per span
  for (const char* bad : {"redistribute:0,0", "redistribute:-1,2",
                          "redistribute:", "redistribute:a", "redistribute:1e39"})
    EXPECT_THROW(parse_steer_rule(bad, spec, "--steer"), UsageError) << bad;
}

TEST(SteeringRedistribute, KeepsTheDocumentsTotalAndTouchesNothingElse) {
  // Found in the Middle eq. 5-6: documents [1,3), [4,7), [8,9); keys 0, 3, 7, 9 are the template.
  Steering s;
  s.rule = Steering::Redistribute;
  s.spans = {{1, 3}, {4, 7}, {8, 9}};
  s.shares = {0.2f, 0.5f, 0.3f};
  s.layers = {0};
  const std::vector<float> w0 = softmax_of({1.0, 0.2, -0.3, 0.8, 0.1, 0.0, 0.4, 1.3, -1.0, 0.5});
  std::vector<float> w = w0;
  steer_row(s, 9, w.data(), 10);
  double c0 = 0, c1 = 0;
  for (const TokenSpan& sp : s.spans)
    for (int j = sp.begin; j < sp.end; ++j) c0 += w0[size_t(j)], c1 += w[size_t(j)];
  EXPECT_NEAR(c1, c0, 1e-7);                                               // C unchanged
  for (int j : {0, 3, 7, 9}) EXPECT_EQ(w[size_t(j)], w0[size_t(j)]) << j;  // bit-identical
  const double want[] = {0.2, 0.5, 0.3};
  for (size_t i = 0; i < 3; ++i) {
    double m0 = 0, m1 = 0;
    for (int j = s.spans[i].begin; j < s.spans[i].end; ++j) m0 += w0[size_t(j)], m1 += w[size_t(j)];
    EXPECT_NEAR(m1, want[i] * c0, 1e-7) << i;
    // Within a document the tokens keep their proportions.
    for (int j = s.spans[i].begin; j < s.spans[i].end; ++j)
      EXPECT_NEAR(w[size_t(j)] / m1, w0[size_t(j)] / m0, 1e-6);
  }
  // A row inside the second document sees only the first as ended: its mass stays (its weight is
  // the whole of the weights with mass), so the row is unchanged.
  w = w0;
  steer_row(s, 5, w.data(), 6);
  for (int j = 0; j < 6; ++j) EXPECT_NEAR(w[size_t(j)], w0[size_t(j)], 1e-7);
}

}  // namespace
}  // namespace ragform::runtime
