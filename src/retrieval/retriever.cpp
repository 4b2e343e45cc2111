#include "retrieval/retriever.h"

#include <algorithm>

#include "base/error.h"
#include "retrieval/fusion.h"

namespace ragform::retrieval {

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::Bm25:
      return "bm25";
    case Mode::Dense:
      return "dense";
    case Mode::Hybrid:
      return "hybrid";
  }
  return "?";
}

Mode parse_mode(const std::string& s) {
  if (s == "bm25") return Mode::Bm25;
  if (s == "dense") return Mode::Dense;
  if (s == "hybrid") return Mode::Hybrid;
  throw UsageError("--mode", "expected bm25, dense or hybrid, got '" + s + "'");
}

Retriever::Retriever(const std::string& dir, const RetrieverOptions& opt,
                     std::shared_ptr<const DenseIndex> dense)
    : dir_(dir), opt_(opt), dense_(std::move(dense)) {
  const int n = std::max(1, opt_.threads);
  for (int i = 0; i < n; ++i)
    conns_.push_back(std::make_unique<Bm25Index>(dir, Bm25Index::Open::Read));
  // An index without passages answers every question with nothing: an error, not empty results
  // that look like a retrieval failure of every question.
  if (conns_[0]->size() == 0)
    throw Error(dir,
                "the index holds no passages (an index build that failed before its first "
                "passage? rebuild it)");
  if (n > 1) pool_ = std::make_unique<ThreadPool>(n);
  if (opt_.mode != Mode::Bm25) {
    if (!opt_.encoder)
      throw UsageError("retrieve", std::string("--mode ") + mode_name(opt_.mode) +
                                       " needs the index's encoder model (-m)");
    if (!dense_) dense_ = std::make_shared<const DenseIndex>(dir);
    dense_->require_encoder(opt_.encoder_sha256, opt_.encoder_name);
    DenseIndex::set_threads(n);
  }
}

Retriever::~Retriever() = default;

size_t Retriever::size() const { return conns_[0]->size(); }

std::vector<std::vector<Hit>> Retriever::bm25(const std::vector<std::string>& qs, int k) {
  std::vector<std::vector<Hit>> out(qs.size());
  auto run = [&](size_t b, size_t e, int worker) {
    for (size_t i = b; i < e; ++i) out[i] = conns_[size_t(worker)]->search(qs[i], k);
  };
  if (pool_)
    pool_->parallel_for(qs.size(), run);
  else
    run(0, qs.size(), 0);
  return out;
}

std::vector<std::vector<Hit>> Retriever::dense_hits(const std::vector<std::string>& qs, int k) {
  const auto& m = dense_->meta();
  auto embs = opt_.encoder->embed(qs, model::parse_pooling(m.pooling), m.normalize);
  std::vector<float> q(qs.size() * size_t(m.dims));
  for (size_t i = 0; i < embs.size(); ++i) {
    if (int(embs[i].vector.size()) != m.dims)
      throw Error("retrieve", "the encoder gives " + std::to_string(embs[i].vector.size()) +
                                  "-d vectors, the index holds " + std::to_string(m.dims) + "-d");
    std::copy(embs[i].vector.begin(), embs[i].vector.end(), q.begin() + long(i * size_t(m.dims)));
    truncated_ += embs[i].truncated ? 1 : 0;
  }
  return dense_->search(q.data(), qs.size(), k);
}

std::vector<std::vector<Retrieved>> Retriever::retrieve(const std::vector<std::string>& qs, int k) {
  std::vector<std::vector<Hit>> hits;
  if (opt_.mode == Mode::Bm25) {
    hits = bm25(qs, k);
  } else if (opt_.mode == Mode::Dense) {
    hits = dense_hits(qs, k);
  } else {
    const int depth = std::max(2 * k, 100);
    auto a = bm25(qs, depth);
    auto b = dense_hits(qs, depth);
    hits.resize(qs.size());
    for (size_t i = 0; i < qs.size(); ++i) hits[i] = reciprocal_rank_fusion({a[i], b[i]}, k);
  }
  std::vector<std::vector<Retrieved>> out(qs.size());
  for (size_t i = 0; i < qs.size(); ++i) {
    int rank = 0;
    for (const Hit& h : hits[i]) {
      StoredPassage p = conns_[0]->passage(h.rowid);
      out[i].push_back({std::move(p.id), std::move(p.title), std::move(p.text), h.score, ++rank});
    }
  }
  return out;
}

}  // namespace ragform::retrieval
