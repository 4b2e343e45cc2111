// ragform attention: the final token's attention over the prompt, and C-NORM's ABS.
#include <cstdio>
#include <optional>

#include "base/error.h"
#include "cli/command.h"
#include "cli/json_out.h"
#include "cli/option_flags.h"
#include "cli/reader_flags.h"
#include "cli/steer_flags.h"
#include "pipelines/cnorm/cnorm.h"

namespace ragform::cli {
namespace {

// One line per document: slot, byte span, mass (and bias, calibrated), then the ranking.
void print_documents(const nlohmann::json& docs) {
  for (const auto& d : docs["documents"]) {
    std::printf("doc %zu [%zu:%zu) mass %.6f", d["slot"].get<size_t>(), d["start"].get<size_t>(),
                d["end"].get<size_t>(), d["mass"].get<double>());
    if (d.contains("calibrated"))
      std::printf(" bias %.6f calibrated %+.6f", d["bias"].get<double>(),
                  d["calibrated"].get<double>());
    std::printf("\n");
  }
  std::printf("ranking %s\n", docs["ranking"].dump().c_str());
}

int run_attention(const std::vector<std::string>& argv) {
  Args a("attention",
         "Attention of a query token over the prompt, per head and averaged, with C-NORM's ABS.",
         "Softmax weights after masking, by default of the last layer for the final prompt token.\n"
         "--json prints {\"layer\", \"query_position\", \"heads\": [[weight per key] per head], "
         "\"mean\",\n"
         "\"abs\"} (ABS = 1 - 2|mu - 0.5| of the head mean, cnorm paper section 4.2).");
  ReaderFlags rf(a);
  PromptFlags pf(a);
  SteerFlags sf(a);
  cnorm::RelevanceRequest rr;  // --layer, --query (cnorm/position_bias.h)
  OptionFlags<cnorm::RelevanceRequest> rr_flags(a, rr);
  auto& doc_spans = a.opt<std::string>(
      "--doc-spans", "LIST",
      "documents as byte ranges START:END,... of the prompt: report each one's attention mass", "");
  auto& calibrated =
      a.flag("--calibrated", "with --doc-spans: subtract the --bias curve at each document's slot");
  auto& bias =
      a.opt<std::string>("--bias", "FILE", "bias curve from `ragform position-bias -o`", "");
  auto& json = a.flag("--json", "print one JSON object on stdout");
  if (!a.parse(argv)) return 0;
  rr_flags.apply();
  reader::AttentionQuery q;
  try {
    q = cnorm::relevance_query(rr);
  } catch (const OptionError& e) {
    throw rr_flags.spell(e);
  }
  const reader::SteeringParams steer = sf.params();
  if (calibrated.value != !bias.value.empty())
    throw UsageError("--calibrated", "--calibrated and --bias FILE go together");
  if (calibrated.value && doc_spans.value.empty())
    throw UsageError("--calibrated", "needs --doc-spans");
  std::optional<cnorm::BiasCurve> curve;
  if (calibrated.value) curve = cnorm::load_bias_curve(bias.value);
  std::vector<cnorm::CharSpan> spans;
  if (!doc_spans.value.empty()) spans = cnorm::parse_char_spans(doc_spans.value, "--doc-spans");
  std::string prompt = pf.read();
  auto reader = rf.open_native();
  reader->steering = steer;  // the weights reported are the steered ones
  auto r = reader->attention(prompt, q);
  const auto& row = r.rows.at(0);
  double abs = cnorm::attention_balance_score(row.mean);
  nlohmann::json docs;
  if (!spans.empty()) {
    cnorm::check_document_work(spans.size(), 1, row.mean.size(), "--doc-spans");
    docs = cnorm::document_report(prompt, r, row, spans, curve ? &*curve : nullptr);
  }
  if (json.value) {
    nlohmann::json heads = nlohmann::json::array();
    for (auto& h : row.heads) {
      nlohmann::json hv = nlohmann::json::array();
      for (float w : h) hv.push_back(f9(w));
      heads.push_back(hv);
    }
    nlohmann::json mean = nlohmann::json::array();
    for (float w : row.mean) mean.push_back(f9(w));
    nlohmann::json j = {{"layer", row.layer}, {"query_position", row.query_position},
                        {"heads", heads},     {"mean", mean},
                        {"abs", f9(abs)},     {"ids", r.ids},
                        {"pieces", r.pieces}};
    if (!docs.is_null()) j.update(docs);
    print_json_line(j);
  } else {
    std::printf("layer %d, query position %d, %zu heads\n", row.layer, row.query_position,
                row.heads.size());
    for (size_t j = 0; j < row.mean.size(); ++j) {
      int bar = int(row.mean[j] * 60 + 0.5f);
      std::printf("%5zu %-16s %.6f %s\n", j, ("'" + r.pieces[j] + "'").c_str(), row.mean[j],
                  std::string(size_t(bar), '#').c_str());
    }
    std::printf("ABS %.6f\n", abs);
    if (!docs.is_null()) print_documents(docs);
  }
  return 0;
}

RAGFORM_COMMAND("attention", "last-token attention over the prompt, with C-NORM's ABS",
                run_attention, 32);

}  // namespace
}  // namespace ragform::cli
