// ragform attention: the final token's attention over the prompt, and C-NORM's ABS.
#include <cstdio>

#include "cli/command.h"
#include "cli/json_out.h"
#include "cli/reader_flags.h"
#include "pipelines/cnorm/cnorm.h"

namespace ragform::cli {
namespace {

int run_attention(const std::vector<std::string>& argv) {
  Args a("attention",
         "Attention of a query token over the prompt, per head and averaged, with C-NORM's ABS.",
         "Softmax weights after masking, by default of the last layer for the final prompt token.\n"
         "--json prints {\"layer\", \"query_position\", \"heads\": [[weight per key] per head], "
         "\"mean\",\n"
         "\"abs\"} (ABS = 1 - 2|mu - 0.5| of the head mean, cnorm paper section 4.2).");
  ReaderFlags rf(a);
  PromptFlags pf(a);
  auto& layer = a.opt<int>("--layer", "L", "layer (negative counts from the end)", -1)
                    .range(kAnyInt, kMaxInt);
  auto& query = a.opt<int>("--query", "POS", "query position (negative counts from the end)", -1)
                    .range(kAnyInt, kMaxInt);
  auto& json = a.flag("--json", "print one JSON object on stdout");
  if (!a.parse(argv)) return 0;
  std::string prompt = pf.read();
  auto reader = rf.open_native();
  reader::AttentionQuery q;
  q.layers = {layer.value};
  q.query_positions = {query.value};
  auto r = reader->attention(prompt, q);
  const auto& row = r.rows.at(0);
  double abs = cnorm::attention_balance_score(row.mean);
  if (json.value) {
    nlohmann::json heads = nlohmann::json::array();
    for (auto& h : row.heads) {
      nlohmann::json hv = nlohmann::json::array();
      for (float w : h) hv.push_back(f9(w));
      heads.push_back(hv);
    }
    nlohmann::json mean = nlohmann::json::array();
    for (float w : row.mean) mean.push_back(f9(w));
    print_json_line({{"layer", row.layer},
                     {"query_position", row.query_position},
                     {"heads", heads},
                     {"mean", mean},
                     {"abs", f9(abs)},
                     {"ids", r.ids},
                     {"pieces", r.pieces}});
  } else {
    std::printf("layer %d, query position %d, %zu heads\n", row.layer, row.query_position,
                row.heads.size());
    for (size_t j = 0; j < row.mean.size(); ++j) {
      int bar = int(row.mean[j] * 60 + 0.5f);
      std::printf("%5zu %-16s %.6f %s\n", j, ("'" + r.pieces[j] + "'").c_str(), row.mean[j],
                  std::string(size_t(bar), '#').c_str());
    }
    std::printf("ABS %.6f\n", abs);
  }
  return 0;
}

RAGFORM_COMMAND("attention", "last-token attention over the prompt, with C-NORM's ABS",
                run_attention, 32);

}  // namespace
}  // namespace ragform::cli
