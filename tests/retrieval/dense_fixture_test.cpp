// Dense and hybrid retrieval end to end with the shared tiny BERT encoder, and the refusal of
// queries embedded by another encoder. (FAISS runs OpenMP threads: no "_concurrency" in this
// file's name, so it stays out of the TSan build.)
#include <fstream>

#include <gtest/gtest.h>

#include "base/error.h"
#include "reader/native_encoder.h"
#include "retrieval/dense_index.h"
#include "retrieval/index_build.h"
#include "retrieval/make_corpus.h"
#include "retrieval/retriever.h"
#include "support/test_support.h"

namespace ragform::testing {
namespace {

namespace fs = std::filesystem;

struct Sample {
  std::vector<std::string> ids, titles, texts;
};

// The first n passages of the NQ corpus, written to `out`.
Sample nq_sample(const fs::path& dir, size_t n, const fs::path& out) {
  auto corpus = make_corpus(dir, "nq");
  std::ifstream in(corpus);
  std::ofstream o(out);
  Sample s;
  std::string line;
  while (s.ids.size() < n && std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    s.ids.push_back(j["id"]);
    s.titles.push_back(j["title"]);
    s.texts.push_back(j["text"]);
    o << line << "\n";
  }
  return s;
}

class Dense : public ::testing::TestWithParam<retrieval::FaissKind> {};

TEST_P(Dense, PassageTextFindsItselfFirstAndHybridFuses) {
  const auto model = shared_path("fixtures/models/tiny-bert.gguf");
  ASSERT_TRUE(fs::exists(model)) << model;
  auto dir = temp_dir("dense");
  auto s = nq_sample(dir, 300, dir / "sample.jsonl");
  ASSERT_EQ(s.ids.size(), 300u);

  reader::NativeEncoder enc(model.string());
  auto id = retrieval::encoder_id(model.string());
  retrieval::BuildOptions bo;
  bo.corpus = (dir / "sample.jsonl").string();
  bo.dir = (dir / "ix").string();
  bo.encoder = &enc;
  bo.encoder_name = id.name;
  bo.encoder_sha256 = id.sha256;
  bo.faiss = GetParam();
  bo.batch = 64;
  bo.ivf_train = 200;  // IVF trains on the first 200 vectors, the rest are added after
  auto sum = retrieval::build_index(bo);
  EXPECT_EQ(sum.total, 300u);
  EXPECT_EQ(sum.embedded, 300u);

  retrieval::DenseIndex di(bo.dir);
  EXPECT_EQ(di.meta().count, 300);
  EXPECT_EQ(di.meta().encoder_sha256, id.sha256);
  EXPECT_EQ(di.meta().kind, GetParam());
  EXPECT_TRUE(di.meta().normalize);

  retrieval::RetrieverOptions ro;
  ro.mode = retrieval::Mode::Dense;
  ro.encoder = &enc;
  ro.encoder_sha256 = id.sha256;
  ro.encoder_name = id.name;
  retrieval::Retriever r(bo.dir, ro);
  // A passage's own embedded text is its nearest neighbour (cosine 1), up to duplicates.
  std::vector<std::string> qs;
  for (size_t i = 0; i < 300; i += 30) qs.push_back(s.titles[i] + "\n" + s.texts[i]);
  auto got = r.retrieve(qs, 5);
  size_t self_first = 0;
  for (size_t q = 0; q < qs.size(); ++q) {
    ASSERT_EQ(got[q].size(), 5u);
    EXPECT_EQ(got[q][0].rank, 1);
    EXPECT_GE(got[q][0].score, got[q][4].score);
    self_first += got[q][0].id == s.ids[q * 30];
    if (got[q][0].id == s.ids[q * 30]) {
      EXPECT_NEAR(got[q][0].score, 1.0, 1e-4);
    }
  }
  // flat is exact; HNSW / IVF (nprobe = nlist / 8) are approximate.
  EXPECT_GE(self_first, GetParam() == retrieval::FaissKind::Flat ? qs.size() : qs.size() / 2);

  ro.mode = retrieval::Mode::Hybrid;
  retrieval::Retriever h(bo.dir, ro);
  auto hy = h.retrieve({"who got the first nobel prize in physics"}, 20);
  ASSERT_EQ(hy[0].size(), 20u);
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(hy[0][i].rank, int(i) + 1);
    EXPECT_LE(hy[0][i].score, 2.0 / 61 + 1e-12);  // at most first in both rankings
    if (i) {
      EXPECT_LE(hy[0][i].score, hy[0][i - 1].score);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Faiss, Dense,
                         ::testing::Values(retrieval::FaissKind::Flat, retrieval::FaissKind::Hnsw,
                                           retrieval::FaissKind::Ivf));

TEST(DenseRefusal, AnotherEncodersQueriesAreRefused) {
  const auto model = shared_path("fixtures/models/tiny-bert.gguf");
  const auto other = shared_path("fixtures/models/tiny-bert-nli.gguf");
  ASSERT_TRUE(fs::exists(model) && fs::exists(other));
  auto dir = temp_dir("dense");
  write_file(dir / "c.jsonl",
             "{\"id\": \"a\", \"text\": \"alpha\"}\n{\"id\": \"b\", \"text\": \"beta\"}\n");
  reader::NativeEncoder enc(model.string());
  auto id = retrieval::encoder_id(model.string());
  retrieval::BuildOptions bo;
  bo.corpus = (dir / "c.jsonl").string();
  bo.dir = (dir / "ix").string();
  bo.encoder = &enc;
  bo.encoder_name = id.name;
  bo.encoder_sha256 = id.sha256;
  retrieval::build_index(bo);

  reader::NativeEncoder enc2(other.string());
  auto id2 = retrieval::encoder_id(other.string());
  retrieval::RetrieverOptions ro;
  ro.mode = retrieval::Mode::Dense;
  ro.encoder = &enc2;
  ro.encoder_sha256 = id2.sha256;
  ro.encoder_name = id2.name;
  try {
    retrieval::Retriever r(bo.dir, ro);
    FAIL() << "queries of another encoder were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("was built with encoder tiny-bert.gguf"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("use -m tiny-bert.gguf"), std::string::npos);
  }
  // Appending with another encoder is refused too.
  bo.append = true;
  bo.encoder = &enc2;
  bo.encoder_name = id2.name;
  bo.encoder_sha256 = id2.sha256;
  EXPECT_THROW(retrieval::build_index(bo), Error);

  // Issue 40, pass 19: dense.json is what the build wrote: a key it does not have is refused (a
  // misspelt "ivf_nprobe" searched one list silently), a null one is absent, and a value of
  // another type is named without the JSON library's text.
  const fs::path meta = fs::path(bo.dir) / "dense.json";
  const nlohmann::json written = nlohmann::json::parse(read_file(meta));
  for (const auto& [key, value, says] :
       std::vector<std::tuple<std::string, nlohmann::json, std::string>>{
           {"ivf_nprob", 4, "'ivf_nprob' is not supported (dense index metadata takes"},
           {"hnsw_m", "x", "dense index metadata: type must be number, but is string"}}) {
    nlohmann::json j = written;
    j[key] = value;
    write_file(meta, j.dump());
    try {
      retrieval::DenseIndex ix(bo.dir);
      ADD_FAILURE() << key << " was accepted";
    } catch (const UsageError& e) {
      ADD_FAILURE() << "a UsageError, not the index's runtime Error: " << e.what();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find("json.exception"), std::string::npos) << e.what();
    }
  }
  nlohmann::json nulls = written;
  nulls["hnsw_m"] = nullptr;
  nulls["note"] = nullptr;
  write_file(meta, nulls.dump());
  EXPECT_NO_THROW(retrieval::DenseIndex ix(bo.dir));
}

}  // namespace
}  // namespace ragform::testing
