#include "retrieval/index_build.h"

#include <filesystem>
#include <memory>
#include <vector>

#include "base/error.h"
#include "retrieval/bm25_index.h"
#include "retrieval/corpus.h"

namespace ragform::retrieval {

namespace fs = std::filesystem;

namespace {

// Passages waiting for their vectors (and, for IVF before training, vectors waiting for the index).
struct DenseBuilder {
  const BuildOptions& opt;
  BuildSummary& sum;
  std::unique_ptr<DenseIndex> index;
  std::vector<int64_t> rowids;
  std::vector<std::string> texts;
  std::vector<float> held;  // IVF: vectors before training
  std::vector<int64_t> held_ids;

  DenseBuilder(const BuildOptions& o, BuildSummary& s) : opt(o), sum(s) {
    if (opt.append && DenseIndex::exists(opt.dir)) {
      index = std::make_unique<DenseIndex>(opt.dir);
      index->require_encoder(opt.encoder_sha256, opt.encoder_name);
    }
  }

  void push(int64_t rowid, const std::string& title, const std::string& text) {
    if (index && index->contains(rowid)) return;
    rowids.push_back(rowid);
    texts.push_back(title.empty() ? text : title + "\n" + text);
    if (texts.size() >= opt.batch) flush();
  }

  void flush() {
    if (texts.empty()) return;
    auto embs = opt.encoder->embed(texts, std::nullopt, true);
    const int d = int(embs.at(0).vector.size());
    if (d == 0) throw Error("index", opt.encoder_name + " gives no pooled vector (pooling none)");
    if (!index) {
      DenseMeta m;
      m.encoder = opt.encoder_name;
      m.encoder_sha256 = opt.encoder_sha256;
      m.pooling = model::pooling_name(opt.encoder->default_pooling());
      m.normalize = true;
      m.dims = d;
      m.kind = opt.faiss;
      m.hnsw_m = opt.hnsw_m;
      index = std::make_unique<DenseIndex>(opt.dir, m);
    }
    std::vector<float> x;
    x.reserve(embs.size() * size_t(d));
    for (const auto& e : embs) {
      x.insert(x.end(), e.vector.begin(), e.vector.end());
      sum.truncated += e.truncated ? 1 : 0;
      index->meta().truncated += e.truncated ? 1 : 0;
    }
    if (!index->trained()) {
      held.insert(held.end(), x.begin(), x.end());
      held_ids.insert(held_ids.end(), rowids.begin(), rowids.end());
      if (held_ids.size() >= opt.ivf_train) train_and_add_held();
    } else {
      index->add(x.data(), rowids.data(), rowids.size());
    }
    sum.embedded += rowids.size();
    rowids.clear();
    texts.clear();
  }

  void train_and_add_held() {
    if (held_ids.empty()) return;
    index->train(held.data(), held_ids.size());
    index->add(held.data(), held_ids.data(), held_ids.size());
    held.clear();
    held_ids.clear();
  }

  void finish() {
    flush();
    if (index && !index->trained()) train_and_add_held();
    if (index) index->save();
  }
};

// The build itself; on an error the caller cleans up (build_index).
BuildSummary build_into(const BuildOptions& opt) {
  BuildSummary sum;
  CorpusReader corpus(opt.corpus);
  Bm25Index ix(opt.dir, opt.append ? Bm25Index::Open::Append : Bm25Index::Open::Create);
  std::unique_ptr<DenseBuilder> dense;
  if (opt.encoder) dense = std::make_unique<DenseBuilder>(opt, sum);
  sum.dense = bool(dense);

  Stage progress(opt.hooks, "index", 0);
  ix.begin();
  Passage p;
  size_t since_checkpoint = 0;
  while (corpus.next(p)) {
    ++sum.read;
    auto [added, rowid] = ix.add(p, opt.corpus);
    if (added == Bm25Index::Added::New)
      ++sum.added;
    else
      ++sum.already_indexed;
    if (dense) dense->push(rowid, p.title, p.text);
    progress.add(1);
    if (++since_checkpoint >= opt.checkpoint) {
      // Vectors only of committed passages reach the saved FAISS file (see the header).
      if (dense) dense->flush();
      ix.commit();
      if (dense && dense->index && dense->index->trained()) dense->index->save();
      ix.begin();
      since_checkpoint = 0;
    }
  }
  if (dense) dense->flush();
  ix.commit();
  if (dense) dense->finish();
  if (sum.added > 0) ix.optimize();
  sum.total = ix.size();
  ix.settle();
  return sum;
}

// The files a build writes into its directory (bm25_index.h, dense_index.h), with SQLite's
// write-ahead log and the temporary files a crashed save left ("dense.faiss.tmp.<random>",
// base/atomic_file.h).
void remove_index_files(const fs::path& dir) {
  std::error_code ec;
  for (const char* f : {"index.sqlite", "index.sqlite-wal", "index.sqlite-shm",
                        "index.sqlite-journal", "dense.faiss", "dense.json"})
    fs::remove(dir / f, ec);
  std::vector<fs::path> stray;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with("dense.faiss.tmp") || name.starts_with("dense.json.tmp"))
      stray.push_back(it->path());
  }
  for (const fs::path& p : stray) fs::remove(p, ec);
}

}  // namespace

BuildSummary build_index(const BuildOptions& opt) {
  // --append: every passage goes in through transactions, so a failed append rolls back to the
  // last checkpoint and the index that was there stays as it was (plus, for a long corpus, whole
  // checkpoints of it, which a rerun with --append skips).
  if (opt.append) return build_into(opt);
  // A new index that fails (a bad corpus line, a truncated .gz) is removed, with the directory
  // when the build made it: a leftover empty index would make the rerun with a fixed corpus
  // "already hold an index" and give empty results to retrieve. (A killed build leaves its
  // checkpoints instead, for --append to resume.)
  std::error_code ec;
  const bool dir_existed = fs::exists(opt.dir, ec) || ec;
  Bm25Index::require_no_index(opt.dir);
  try {
    return build_into(opt);
  } catch (...) {
    remove_index_files(opt.dir);
    if (!dir_existed) fs::remove(opt.dir, ec);  // only if empty: never another's files
    throw;
  }
}

}  // namespace ragform::retrieval
