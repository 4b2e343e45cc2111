// Calibrated relevance (pipelines/cnorm/relevance.h): document spans resolved to tokens by the
// any-character rule, masses summed from an attention row, the bias curve subtracted, and the
// documents ranked. The attention here is constructed, so the right answer is known.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "pipelines/cnorm/cnorm.h"

namespace {

using namespace ragform::cnorm;
using ragform::Error;
using ragform::UsageError;

TEST(CalibratedRelevance, ParsesSpanLists) {
  EXPECT_EQ(parse_char_spans("0:5,7:9", "--doc-spans"), (std::vector<CharSpan>{{0, 5}, {7, 9}}));
  for (const char* bad : {"", "3", "5:5", "6:2", "a:3", "1:2,", "1:2,,3:4", "-1:4"})
    EXPECT_THROW(parse_char_spans(bad, "--doc-spans"), UsageError) << bad;
  EXPECT_EQ(char_spans_from_json(nlohmann::json::parse("[[1,4],[4,8]]"), "doc_spans"),
            (std::vector<CharSpan>{{1, 4}, {4, 8}}));
  for (const char* bad : {"[]", "[[1]]", "[[2,1]]", "[[-1,3]]", "\"0:3\"", "[[0.5,3]]"})
    EXPECT_THROW(char_spans_from_json(nlohmann::json::parse(bad), "doc_spans"), UsageError) << bad;
}

TEST(CalibratedRelevance, LaysPiecesOverThePromptText) {
  // SentencePiece: BOS and a dummy-prefix space the text does not have.
  const std::string prompt = "Once upon a time";
  auto c = token_chars(prompt, {"<s>", " Once", " upon", " a", " time"});
  EXPECT_EQ(c, (std::vector<CharSpan>{{0, 0}, {0, 4}, {4, 9}, {9, 11}, {11, 16}}));
  // A chat template's markers around the user's text cover nothing.
  c = token_chars("hi there", {"<|im_start|>", "hi", " there", "<|im_end|>", "\n"});
  EXPECT_EQ(c, (std::vector<CharSpan>{{0, 0}, {0, 2}, {2, 8}, {0, 0}, {0, 0}}));
  // A template's role piece equal to the text's first word is the template's, not the text's.
  c = token_chars("user wins", {"<|im_start|>", "user", "\n", "user", " wins", "<|im_end|>"});
  EXPECT_EQ(c, (std::vector<CharSpan>{{0, 0}, {0, 0}, {0, 0}, {0, 4}, {4, 9}, {0, 0}}));
  EXPECT_EQ(resolve_spans("user wins", {"<|im_start|>", "user", "\n", "user", " wins"}, {{0, 2}}),
            (std::vector<TokenSpan>{{3, 4}}));
  // Pieces that stop short of the text (a prompt cut to fit) are an error, not a silent shift.
  EXPECT_THROW(token_chars(prompt, {"<s>", " Once", " upon"}), Error);
}

TEST(CalibratedRelevance, ATokenIsInASpanWhenAnyOfItsCharactersIs) {
  const std::string prompt = "Once upon a time";
  const std::vector<std::string> pieces = {"<s>", " Once", " upon", " a", " time"};
  // "nce u": the last characters of token 1 and the first of token 2.
  EXPECT_EQ(resolve_spans(prompt, pieces, {{1, 6}}), (std::vector<TokenSpan>{{1, 3}}));
  // One character of " time" (its 't'), and the whole prompt (BOS is in no span).
  EXPECT_EQ(resolve_spans(prompt, pieces, {{12, 13}, {0, 16}}),
            (std::vector<TokenSpan>{{4, 5}, {1, 5}}));
  EXPECT_THROW(resolve_spans(prompt, pieces, {{10, 17}}), UsageError);
}

// K documents of one token each after BOS; every document's mass is the bias curve at its slot
// plus its relevance, and only the planted one is relevant. Its slot moves through all K.
struct Planted {
  std::string prompt;
  std::vector<std::string> pieces;
  std::vector<CharSpan> spans;
  ragform::reader::AttentionResult result;
};

Planted planted_at(size_t slot, const std::vector<double>& bias, double relevance) {
  Planted p;
  p.pieces = {"<s>"};
  std::vector<float> row = {0.2f};  // the attention sink on BOS
  for (size_t k = 0; k < bias.size(); ++k) {
    std::string doc = (k ? " doc" : "doc") + std::to_string(k);
    p.spans.push_back({p.prompt.size() + (k ? 1 : 0), p.prompt.size() + doc.size()});
    p.prompt += doc;
    p.pieces.push_back(doc);
    row.push_back(float(bias[k] + (k == slot ? relevance : 0.0)));
  }
  ragform::reader::AttentionRows r;
  r.layer = 3;
  r.query_position = int(row.size()) - 1;
  r.mean = row;
  p.result.pieces = p.pieces;
  p.result.rows = {r};
  return p;
}

TEST(CalibratedRelevance, APlantedDocumentRanksFirstAtEverySlot) {
  const std::vector<double> bias = {0.30, 0.10, 0.04, 0.02, 0.05, 0.12, 0.27};  // U-shaped
  BiasCurve curve;
  curve.curve = bias;
  curve.k = bias.size();
  for (size_t slot = 0; slot < bias.size(); ++slot) {
    Planted p = planted_at(slot, bias, 0.03);
    nlohmann::json j = document_report(p.prompt, p.result, p.result.rows[0], p.spans, &curve);
    EXPECT_EQ(j["ranking"][0], slot) << "calibrated, planted at " << slot;
    EXPECT_NEAR(j["documents"][slot]["calibrated"].get<double>(), 0.03, 1e-6);
    EXPECT_NEAR(j["documents"][slot]["bias"].get<double>(), bias[slot], 1e-9);
    // Raw attention ranks an edge document first whenever the planted one sits in the middle:
    // the bias the calibration removes.
    nlohmann::json raw = document_report(p.prompt, p.result, p.result.rows[0], p.spans, nullptr);
    if (slot != 0 && slot + 1 != bias.size()) {
      EXPECT_NE(raw["ranking"][0], slot) << slot;
    }
    EXPECT_FALSE(raw["documents"][0].contains("calibrated"));
  }
}

// Pass 23: a document's slot is its place in the prompt. Spans in another order, or overlapping,
// are refused with a curve (a reordered list calibrated each document with another slot's bias;
// a span given twice got two); without one they are only masses, in the order asked.
TEST(CalibratedRelevance, SpansOutOfThePromptsOrderAreRefusedWithACurve) {
  const std::vector<double> bias = {0.30, 0.10, 0.27};
  BiasCurve curve;
  curve.curve = bias;
  curve.k = bias.size();
  Planted p = planted_at(1, bias, 0.03);
  std::vector<CharSpan> reordered = {p.spans[2], p.spans[0], p.spans[1]};
  EXPECT_THROW(document_report(p.prompt, p.result, p.result.rows[0], reordered, &curve),
               UsageError);
  std::vector<CharSpan> twice = {p.spans[0], p.spans[0], p.spans[1]};
  EXPECT_THROW(document_report(p.prompt, p.result, p.result.rows[0], twice, &curve), UsageError);
  const nlohmann::json raw =
      document_report(p.prompt, p.result, p.result.rows[0], reordered, nullptr);
  EXPECT_EQ(raw["documents"].size(), 3u);
  EXPECT_NO_THROW(document_report(p.prompt, p.result, p.result.rows[0], p.spans, &curve));
}

// Pass 24: a chat prompt that the template also writes later ("model" in Gemma's reply header) is
// placed where the reader says it starts, not at its last occurrence in the pieces.
TEST(CalibratedRelevance, ThePromptIsWhereTheReaderSaysItStarts) {
  const std::vector<std::string> pieces = {
      "<bos>", "<start_of_turn>", "user",  "\n", "model", "<end_of_turn>",
      "\n",    "<start_of_turn>", "model", "\n"};
  const size_t user = std::string("<bos><start_of_turn>user\n").size();
  EXPECT_EQ(resolve_spans("model", pieces, {{0, 5}}, user)[0].begin, 4u);
  EXPECT_EQ(resolve_spans("model", pieces, {{0, 5}})[0].begin, 8u);       // unknown: the last one
  EXPECT_EQ(resolve_spans("model", pieces, {{0, 5}}, 999)[0].begin, 8u);  // a wrong one: searched
}

TEST(CalibratedRelevance, UsesTheCurveOfTheRowsLayer) {
  BiasCurve curve;
  curve.curve = {0.0, 0.0, 0.0};
  curve.k = 3;
  curve.layers = {{3, {0.5, 0.0, 0.0}}, {4, {0.0, 0.0, 0.5}}};
  EXPECT_EQ(bias_for_layer(curve, 3), curve.layers[0].curve);
  EXPECT_EQ(bias_for_layer(curve, 7), curve.curve);  // a layer the curve lacks: the overall one
  // Row of layer 3: slot 0 gets 0.5 from the bias alone, so its calibrated relevance is ~0.
  Planted p = planted_at(1, {0.5, 0.0, 0.0}, 0.01);
  nlohmann::json j = document_report(p.prompt, p.result, p.result.rows[0], p.spans, &curve);
  EXPECT_EQ(j["ranking"][0], 1);
  curve.layers.clear();
  j = document_report(p.prompt, p.result, p.result.rows[0], p.spans, &curve);
  EXPECT_EQ(j["ranking"][0], 0);  // with the flat overall curve, slot 0's bias is not removed
  curve.curve = {0.0, 0.0};
  EXPECT_THROW(document_report(p.prompt, p.result, p.result.rows[0], p.spans, &curve), UsageError);
}

TEST(CalibratedRelevance, RankingIsStableOnTies) {
  EXPECT_EQ(rank_documents({0.1, 0.3, 0.1, 0.3}), (std::vector<size_t>{1, 3, 0, 2}));
  EXPECT_EQ(calibrated_relevance({0.5, 0.25}, {0.25, 0.25}), (std::vector<double>{0.25, 0.0}));
  EXPECT_THROW(calibrated_relevance({0.5}, {0.25, 0.25}), Error);
}

TEST(CalibratedRelevance, CurveFilesRoundTripAndRefuseMalformedOnes) {
  BiasCurve c;
  c.task = "needle";
  c.k = 2;
  c.prompts = 6;
  c.curve = {0.25, 0.5};
  c.layers = {{0, {0.125, 0.75}}};
  BiasCurve back = bias_curve_from_json(bias_curve_json(c), "curve");
  EXPECT_EQ(back.curve, c.curve);
  ASSERT_EQ(back.layers.size(), 1u);
  EXPECT_EQ(back.layers[0].curve, c.layers[0].curve);
  EXPECT_EQ(back.prompts, 6u);
  for (const char* bad : {"{}", "{\"curve\":[]}", "{\"curve\":[\"a\"]}",
                          "{\"curve\":[1,2],\"layers\":[{\"layer\":0,\"curve\":[1]}]}",
                          "{\"curve\":[1],\"layers\":[{\"curve\":[1]}]}"})
    EXPECT_THROW(bias_curve_from_json(nlohmann::json::parse(bad), "curve"), UsageError) << bad;
  // Issue 40, pass 11: a field of the wrong type escaped as nlohmann's own type_error (a 500 over
  // HTTP, no field named); a layer past an int wrapped (4294967300 calibrated layer 4); a second
  // curve for one layer and a negative layer were ignored; any number was a curve value.
  for (const auto& [bad, says] : std::vector<std::pair<std::string, std::string>>{
           {R"({"curve":[0.5,0.5],"task":5})", "'task' must be a string"},
           {R"({"curve":[0.5,0.5],"prompts":"x"})", "'prompts' must be a whole number"},
           {R"({"curve":[0.5,0.5],"prompts":-1})", "'prompts' must be a whole number"},
           {R"({"curve":[0.5,0.5],"reader":[]})", "'reader' must be a string"},
           {R"({"curve":[0.5,0.5],"model_sha256":{}})", "'model_sha256' must be a string"},
           {R"({"curve":[0.5,0.5],"run":"x"})", "'run' must be a whole number"},
           {R"({"curve":[0.5,0.5],"layers":[{"layer":4294967300,"curve":[0.9,0.1]}]})",
            "'layers[].layer' must be a whole number in [0, 2147483647], got 4294967300"},
           {R"({"curve":[0.5,0.5],"layers":[{"layer":-1,"curve":[0.9,0.1]}]})",
            "'layers[].layer' must be a whole number"},
           {R"({"curve":[0.5,0.5],"layers":[{"layer":1.5,"curve":[0.9,0.1]}]})",
            "'layers[].layer' must be a whole number"},
           {R"({"curve":[0.5,0.5],"layers":[{"layer":2,"curve":[0.9,0.1]},)"
            R"({"layer":2,"curve":[0.1,0.9]}]})",
            "layer 2 is in 'layers' twice"},
           {R"({"curve":[-1,0.5]})", "'curve' holds -1: an attention mass is in [0, 1]"},
           {R"({"curve":[0.5,1e308]})", "an attention mass is in [0, 1]"},
           {R"({"curve":[0.5,0.5],"layers":[{"layer":0,"curve":[0.5,1.5]}]})",
            "'layers[].curve' holds 1.5"},
           // Pass 18: a key the format does not have was ignored; a misspelt "mesure" read the
           // curve as sums and changed every calibrated number.
           {R"({"curve":[0.5,0.5],"mesure":"mean"})",
            "'mesure' is not supported (a bias curve takes task, k, measure,"},
           {R"({"curve":[0.5,0.5],"bogus":1})", "'bogus' is not supported"},
           {R"({"curve":[0.5,0.5],"layers":[{"layer":0,"curve":[0.5,0.5],"junk":1}]})",
            "'junk' is not supported (an entry of 'layers' takes layer, curve)"},
       }) {
    try {
      bias_curve_from_json(nlohmann::json::parse(bad), "curve.json");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << bad << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("curve.json"), std::string::npos) << e.what();
    }
  }
  // The ends of each range are values.
  const BiasCurve ends = bias_curve_from_json(
      nlohmann::json::parse(R"({"curve":[0,1],"prompts":0,"run":-3,"task":null,)"
                            R"("layers":[{"layer":2147483647,"curve":[1,0]}]})"),
      "curve.json");
  EXPECT_EQ(ends.layers.at(0).layer, 2147483647);
  EXPECT_EQ(ends.run, -3);
  // The measure travels with the curve; a file written before it existed holds sums.
  EXPECT_EQ(back.measure, Measure::Mean);
  c.measure = Measure::Sum;
  EXPECT_EQ(bias_curve_from_json(bias_curve_json(c), "curve").measure, Measure::Sum);
  EXPECT_EQ(bias_curve_from_json(nlohmann::json::parse("{\"curve\":[1]}"), "c").measure,
            Measure::Sum);
  for (const char* bad : {"{\"curve\":[1],\"measure\":\"max\"}", "{\"curve\":[1],\"measure\":1}"})
    EXPECT_THROW(bias_curve_from_json(nlohmann::json::parse(bad), "curve"), UsageError) << bad;
  // A null value is a key not given, a known key or another (base/json_keys.h).
  const BiasCurve nulls = bias_curve_from_json(
      nlohmann::json::parse(R"({"curve":[1],"measure":null,"other":null,"layers":null})"), "c");
  EXPECT_EQ(nulls.measure, Measure::Sum);
  EXPECT_TRUE(nulls.layers.empty());
}

// Documents of different lengths, written from eq. 4: every token of document k gets the per-token
// bias b[k] plus, for the planted one, a per-token relevance r. The paper's measure
// (the mean) recovers r at every slot whatever the lengths; the sum ranks long documents first.
TEST(CalibratedRelevance, TheMeanPerTokenCancelsDocumentLength) {
  const std::vector<double> b = {3e-3, 1e-3, 5e-4, 1e-3, 3e-3};  // per token, U-shaped
  const std::vector<size_t> n = {4, 30, 6, 20, 3};               // tokens per document
  const double r = 2e-4;
  BiasCurve curve;
  curve.curve = b;  // a filler's mean per token at each slot: b[k] (its length does not matter)
  curve.k = b.size();
  curve.measure = Measure::Mean;
  for (size_t slot = 0; slot < b.size(); ++slot) {
    Planted p;
    p.pieces = {"<s>"};
    std::vector<float> row = {0.5f};
    for (size_t k = 0; k < b.size(); ++k) {
      const size_t start = p.prompt.size();
      for (size_t t = 0; t < n[k]; ++t) {
        p.pieces.push_back(" w");
        p.prompt += " w";
        row.push_back(float(b[k] + (k == slot ? r : 0.0)));
      }
      p.spans.push_back({start, p.prompt.size()});
    }
    ragform::reader::AttentionRows rows;
    rows.layer = 0;
    rows.mean = row;
    p.result.pieces = p.pieces;
    p.result.rows = {rows};
    const nlohmann::json j = document_report(p.prompt, p.result, rows, p.spans, &curve);
    EXPECT_EQ(j["measure"], "mean");
    EXPECT_EQ(j["ranking"][0], slot) << slot;
    EXPECT_NEAR(j["documents"][slot]["calibrated"].get<double>(), r, 1e-9) << slot;
    EXPECT_NEAR(j["documents"][slot]["mean"].get<double>(), b[slot] + r, 1e-9);
    EXPECT_NEAR(j["documents"][slot]["mass"].get<double>(), double(n[slot]) * (b[slot] + r), 1e-8);
    // The same prompt under a sum curve of one-sentence fillers (3 tokens at every slot): the
    // longest document wins wherever the planted one is.
    BiasCurve sums = curve;
    sums.measure = Measure::Sum;
    for (size_t k = 0; k < b.size(); ++k) sums.curve[k] = 3 * b[k];
    const nlohmann::json s = document_report(p.prompt, p.result, rows, p.spans, &sums);
    EXPECT_EQ(s["measure"], "sum");
    if (slot != 1) {
      EXPECT_EQ(s["ranking"][0], 1) << slot;
    }
  }
  EXPECT_EQ(parse_measure("sum", "--measure"), Measure::Sum);
  EXPECT_THROW(parse_measure("avg", "--measure"), UsageError);
}

// Eq. 5: alpha_k = softmax(rel_k / t), against the exponentials written out.
TEST(CalibratedRelevance, SoftmaxAllocationIsThePapersEquationFive) {
  const std::vector<double> a = softmax_allocation({1e-4, 2e-4, 0.0}, 5e-5);
  const double z = std::exp(2.0) + std::exp(4.0) + std::exp(0.0);
  EXPECT_NEAR(a[0], std::exp(2.0) / z, 1e-15);
  EXPECT_NEAR(a[1], std::exp(4.0) / z, 1e-15);
  EXPECT_NEAR(a[2], 1.0 / z, 1e-15);
  // Relevance far above t does not overflow: the top document takes everything.
  EXPECT_EQ(softmax_allocation({1.0, 0.0, 0.5}, kPaperTemperature),
            (std::vector<double>{1.0, 0.0, 0.0}));
  // Equal relevance splits evenly at any t.
  EXPECT_EQ(softmax_allocation({0.3, 0.3}, 1e-9), (std::vector<double>{0.5, 0.5}));
  EXPECT_TRUE(softmax_allocation({}, 1.0).empty());
  for (double t : {0.0, -1.0, std::nan(""), HUGE_VAL})
    EXPECT_THROW(softmax_allocation({0.1}, t), UsageError) << t;
}

}  // namespace
