#include "retrieval/dense_index.h"

#include <omp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <faiss/IndexFlat.h>
#include <faiss/IndexHNSW.h>
#include <faiss/IndexIDMap.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/impl/io.h>
#include <faiss/index_io.h>
#include <faiss/utils/distances.h>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/json_error.h"
#include "base/json_file.h"
#include "base/json_keys.h"
#include "store/sha256.h"

namespace ragform::retrieval {

namespace fs = std::filesystem;
using idx_t = faiss::Index::idx_t;  // FAISS 1.7.3 (later releases: faiss::idx_t)

namespace {

std::string meta_file(const std::string& dir) { return (fs::path(dir) / "dense.json").string(); }
std::string faiss_file(const std::string& dir) { return (fs::path(dir) / "dense.faiss").string(); }

faiss::IndexIDMap* id_map(faiss::Index* ix) { return dynamic_cast<faiss::IndexIDMap*>(ix); }

// FAISS reports failures as faiss::FaissException (a std::exception): re-thrown as ragform errors.
template <typename F>
auto guarded(const std::string& what, F&& f) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error("faiss", what + ": " + e.what());
  }
}

// FAISS's writer into a stream (an AtomicFile's): write_index(Index*, const char* path) would
// open the path itself.
struct StreamIOWriter : faiss::IOWriter {
  explicit StreamIOWriter(std::ostream& out) : os(out) { name = "stream"; }
  size_t operator()(const void* p, size_t size, size_t nitems) override {
    os.write(static_cast<const char*>(p), std::streamsize(size * nitems));
    return os ? nitems : 0;
  }
  std::ostream& os;
};

// FAISS reads a file with fread and says only which read came short, in a multi-line
// "Error in ... at faiss/impl/index_read.cpp:..." text; whatever it says, the file is cut off or
// is not a FAISS index, and that is what a user can act on.
faiss::Index* read_faiss_file(const std::string& path) {
  if (std::ifstream probe(path, std::ios::binary); !probe)
    throw FileError(path, std::string("cannot read: ") + std::strerror(errno), errno);
  try {
    return faiss::read_index(path.c_str());
  } catch (const std::exception&) {
    std::error_code ec;
    const auto bytes = fs::file_size(path, ec);
    throw Error(path, "truncated or corrupt FAISS index" +
                          (ec ? std::string() : " (" + std::to_string(bytes) + " bytes)") +
                          ": FAISS cannot read it; rebuild the dense index (ragform index build "
                          "--dense)");
  }
}

}  // namespace

EncoderId encoder_id(const std::string& model_path) {
  return {fs::path(model_path).filename().string(), store::sha256_file(model_path)};
}

const char* faiss_kind_name(FaissKind k) {
  switch (k) {
    case FaissKind::Flat:
      return "flat";
    case FaissKind::Hnsw:
      return "hnsw";
    case FaissKind::Ivf:
      return "ivf";
  }
  return "?";
}

FaissKind parse_faiss_kind(const std::string& s) {
  if (s == "flat") return FaissKind::Flat;
  if (s == "hnsw") return FaissKind::Hnsw;
  if (s == "ivf") return FaissKind::Ivf;
  throw UsageError("--faiss", "expected flat, hnsw or ivf, got '" + s + "'");
}

// Existence checks that cannot throw filesystem_error's raw text: a file that cannot be looked at
// is reported by the read that follows, with its path and reason.
namespace {
bool file_exists(const std::string& p) {
  std::error_code ec;
  return fs::exists(p, ec) || (ec && ec != std::errc::no_such_file_or_directory);
}
}  // namespace

bool DenseIndex::exists(const std::string& dir) { return file_exists(meta_file(dir)); }

DenseIndex::DenseIndex(std::string dir, DenseMeta meta)
    : dir_(std::move(dir)), meta_(std::move(meta)) {
  const int d = meta_.dims;
  if (d <= 0) throw Error("index", "dense vectors need at least one dimension");
  std::unique_ptr<faiss::Index> inner;
  guarded("create", [&] {
    switch (meta_.kind) {
      case FaissKind::Flat:
        inner = std::make_unique<faiss::IndexFlatIP>(d);
        break;
      case FaissKind::Hnsw:
        inner =
            std::make_unique<faiss::IndexHNSWFlat>(d, meta_.hnsw_m, faiss::METRIC_INNER_PRODUCT);
        break;
      case FaissKind::Ivf:
        break;  // created by train(), when nlist is known
    }
    return 0;
  });
  if (inner) {
    auto* m = new faiss::IndexIDMap(inner.release());
    m->own_fields = true;
    index_.reset(m);
  }
}

DenseIndex::DenseIndex(std::string dir) : dir_(std::move(dir)) {
  if (!file_exists(meta_file(dir_)))
    throw Error("index", dir_ + ": no dense index (missing dense.json; build with --dense)");
  // What save() writes, null read as absent (base/json_keys.h; pass 19: a misspelt "ivf_nprobe"
  // searched one list silently, "hnsw_m": null printed the JSON library's text). An index on disk
  // that is not as ragform wrote it is a runtime error, as its other faults are.
  const nlohmann::json j = without_nulls(read_json_file(meta_file(dir_), "dense index metadata"));
  only_json_keys(j,
                 {"encoder", "encoder_sha256", "pooling", "normalize", "metric", "dims", "faiss",
                  "count", "truncated", "hnsw_m", "ivf_nlist", "ivf_nprobe"},
                 meta_file(dir_), "dense index metadata", KeyFault::runtime);
  try {
    meta_.encoder = j.at("encoder").get<std::string>();
    meta_.encoder_sha256 = j.at("encoder_sha256").get<std::string>();
    meta_.pooling = j.at("pooling").get<std::string>();
    meta_.normalize = j.at("normalize").get<bool>();
    meta_.metric = j.at("metric").get<std::string>();
    meta_.dims = j.at("dims").get<int>();
    meta_.kind = parse_faiss_kind(j.at("faiss").get<std::string>());
    meta_.count = j.at("count").get<int64_t>();
    meta_.truncated = j.value("truncated", int64_t(0));
    meta_.hnsw_m = j.value("hnsw_m", 32);
    meta_.ivf_nlist = j.value("ivf_nlist", 0);
    meta_.ivf_nprobe = j.value("ivf_nprobe", 0);
  } catch (const nlohmann::json::exception& e) {
    throw Error(meta_file(dir_), "dense index metadata: " + json_error_text(e.what()));
  }
  if (meta_.metric != "inner_product")
    throw Error("index", meta_file(dir_) + ": metric '" + meta_.metric + "' is not supported");
  if (file_exists(faiss_file(dir_))) {
    index_.reset(read_faiss_file(faiss_file(dir_)));
    auto* m = id_map(index_.get());
    if (!m || index_->d != meta_.dims)
      throw Error("index", faiss_file(dir_) + ": not the index dense.json describes");
    sorted_ids_.assign(m->id_map.begin(), m->id_map.end());
    std::sort(sorted_ids_.begin(), sorted_ids_.end());
    meta_.count = index_->ntotal;
    if (auto* ivf = dynamic_cast<faiss::IndexIVF*>(m->index))
      ivf->nprobe = size_t(std::max(1, meta_.ivf_nprobe));
  } else if (meta_.count > 0 || meta_.kind != FaissKind::Ivf) {
    throw Error("index", dir_ +
                             ": dense.json without dense.faiss (an interrupted build: rebuild "
                             "with --append)");
  }
}

DenseIndex::~DenseIndex() = default;

bool DenseIndex::trained() const { return index_ && index_->is_trained; }

void DenseIndex::train(const float* x, size_t n) {
  if (meta_.kind != FaissKind::Ivf || trained()) return;
  if (n == 0) throw Error("index", "an IVF index needs training vectors");
  const int nlist = int(std::min<size_t>(1024, std::max<size_t>(1, n / 39)));
  meta_.ivf_nlist = nlist;
  meta_.ivf_nprobe = std::max(1, nlist / 8);
  guarded("train", [&] {
    auto* q = new faiss::IndexFlatIP(meta_.dims);
    auto* ivf = new faiss::IndexIVFFlat(q, meta_.dims, size_t(nlist), faiss::METRIC_INNER_PRODUCT);
    ivf->own_fields = true;
    ivf->nprobe = size_t(meta_.ivf_nprobe);
    auto* m = new faiss::IndexIDMap(ivf);
    m->own_fields = true;
    index_.reset(m);
    m->train(idx_t(n), x);
    return 0;
  });
}

void DenseIndex::add(const float* x, const int64_t* rowids, size_t n) {
  if (n == 0) return;
  if (!trained()) throw Error("index", "the IVF index is not trained");
  std::vector<idx_t> ids(rowids, rowids + n);
  guarded("add", [&] {
    index_->add_with_ids(idx_t(n), x, ids.data());
    return 0;
  });
  meta_.count = index_->ntotal;
  const size_t old = sorted_ids_.size();
  sorted_ids_.insert(sorted_ids_.end(), rowids, rowids + n);
  std::sort(sorted_ids_.begin() + long(old), sorted_ids_.end());
  std::inplace_merge(sorted_ids_.begin(), sorted_ids_.begin() + long(old), sorted_ids_.end());
}

bool DenseIndex::contains(int64_t rowid) const {
  return std::binary_search(sorted_ids_.begin(), sorted_ids_.end(), rowid);
}

void DenseIndex::save() const {
  if (index_) {
    // Beside the index file and renamed into place (base/atomic_file.h).
    AtomicFile f(faiss_file(dir_), "index");
    guarded(faiss_file(dir_), [&] {
      StreamIOWriter w(f.stream());
      faiss::write_index(index_.get(), &w);
      return 0;
    });
    f.commit();
  }
  nlohmann::ordered_json j;
  j["encoder"] = meta_.encoder;
  j["encoder_sha256"] = meta_.encoder_sha256;
  j["pooling"] = meta_.pooling;
  j["normalize"] = meta_.normalize;
  j["metric"] = meta_.metric;
  j["dims"] = meta_.dims;
  j["faiss"] = faiss_kind_name(meta_.kind);
  j["count"] = meta_.count;
  j["truncated"] = meta_.truncated;
  j["hnsw_m"] = meta_.hnsw_m;
  j["ivf_nlist"] = meta_.ivf_nlist;
  j["ivf_nprobe"] = meta_.ivf_nprobe;
  write_file_atomically(meta_file(dir_), j.dump(2) + "\n", "index");
}

void DenseIndex::require_encoder(const std::string& sha256, const std::string& name) const {
  if (sha256 == meta_.encoder_sha256) return;
  throw Error("index", dir_ + " was built with encoder " + meta_.encoder + " (sha256 " +
                           meta_.encoder_sha256.substr(0, 16) + "...); queries embedded by " +
                           name + " (sha256 " + sha256.substr(0, 16) +
                           "...) would be compared with vectors of another model: use -m " +
                           meta_.encoder);
}

std::vector<std::vector<Hit>> DenseIndex::search(const float* q, size_t n, int k) const {
  std::vector<std::vector<Hit>> out(n);
  if (n == 0 || k <= 0 || !index_ || index_->ntotal == 0) return out;
  auto* m = id_map(index_.get());
  std::vector<float> dist(n * size_t(k));
  std::vector<idx_t> lab(n * size_t(k));
  // efSearch = max(64, k) travels with this call (SearchParametersHNSW) instead of being written
  // into the shared index, so concurrent searches with different k never race on it. FAISS 1.7.3's
  // IndexIDMap refuses search parameters, so the inner index is searched and its sequential
  // labels are mapped to rowids here (IndexIDMap::search does the same mapping).
  faiss::SearchParametersHNSW hp;
  hp.efSearch = std::max(64, k);
  // A question's scores do not depend on the questions searched beside it: FAISS takes a BLAS
  // product for 20 queries or more, whose sums are ordered otherwise (scores 1e-7 apart, pass 22:
  // `--batch 64` against `--batch 1`, and /v1/retrieve's one question against the CLI's batch).
  // Every batch takes the one-query path (a SIMD dot product per document), as the project's
  // engine keeps a prompt's numbers independent of its batch.
  static const bool one_query_path = [] {
    faiss::distance_compute_blas_threshold = std::numeric_limits<int>::max();
    return true;
  }();
  (void)one_query_path;
  const bool hnsw = dynamic_cast<const faiss::IndexHNSW*>(m->index) != nullptr;
  guarded("search", [&] {
    m->index->search(idx_t(n), q, idx_t(k), dist.data(), lab.data(), hnsw ? &hp : nullptr);
    return 0;
  });
  for (auto& l : lab)
    if (l >= 0) l = m->id_map[size_t(l)];
  for (size_t i = 0; i < n; ++i) {
    for (int j = 0; j < k; ++j) {
      const size_t at = i * size_t(k) + size_t(j);
      if (lab[at] >= 0) out[i].push_back({int64_t(lab[at]), double(dist[at])});
    }
    // Equal scores in the corpus's order, as BM25 ranks them (FAISS's heap gave the reverse).
    std::stable_sort(out[i].begin(), out[i].end(), [](const Hit& a, const Hit& b) {
      return a.score != b.score ? a.score > b.score : a.rowid < b.rowid;
    });
  }
  return out;
}

void DenseIndex::set_threads(int n) {
  if (n > 0) omp_set_num_threads(n);
}

}  // namespace ragform::retrieval
