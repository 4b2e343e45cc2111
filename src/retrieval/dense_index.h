// Dense passage vectors in a FAISS index (DIR/dense.faiss) with its metadata (DIR/dense.json):
//   {"encoder": "tiny-bert.gguf", "encoder_sha256": "...", "pooling": "mean", "normalize": true,
//    "metric": "inner_product", "dims": 128, "faiss": "hnsw", "count": N, "truncated": T,
//    "hnsw_m": 32, "ivf_nlist": 0, "ivf_nprobe": 0}
// Vectors are L2-normalised encoder outputs and the metric is the inner product, so scores are
// cosine similarities. FAISS labels are the passages' rowids in index.sqlite (an IndexIDMap over
// the chosen index), so a vector always names its passage, also after --append.
//
// Index kinds (FAISS 1.7, Debian libfaiss-dev): flat = IndexFlatIP (exact); hnsw = IndexHNSWFlat
// (M links per node, efSearch = max(64, k) at query time); ivf = IndexIVFFlat trained with k-means
// on the first batch of vectors (nlist = min(1024, max(1, n_train / 39)), FAISS's rule of at
// least 39 training points per centroid; nprobe = max(1, nlist / 8)).
//
// Queries must be embedded by the same encoder: require_encoder() compares the model file's
// SHA-256 with the one recorded at build time and refuses another.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "retrieval/bm25_index.h"

namespace faiss {
struct Index;
}

namespace ragform::retrieval {

// Who embedded a vector: the model file's name and the SHA-256 of its bytes (store/sha256.h).
struct EncoderId {
  std::string name, sha256;
};
EncoderId encoder_id(const std::string& model_path);

enum class FaissKind { Flat, Hnsw, Ivf };
const char* faiss_kind_name(FaissKind k);          // "flat", "hnsw", "ivf"
FaissKind parse_faiss_kind(const std::string& s);  // throws UsageError

struct DenseMeta {
  std::string encoder;         // model file name
  std::string encoder_sha256;  // SHA-256 of the model file
  std::string pooling;         // pooling used ("mean", "cls", ...)
  bool normalize = true;
  std::string metric = "inner_product";
  int dims = 0;
  FaissKind kind = FaissKind::Flat;
  int64_t count = 0;      // vectors in the index
  int64_t truncated = 0;  // passages cut to the encoder's context, over all builds
  int hnsw_m = 32;
  int ivf_nlist = 0;
  int ivf_nprobe = 0;
};

class DenseIndex {
 public:
  static bool exists(const std::string& dir);  // DIR/dense.json is there
  // A new, empty index (written by save()).
  DenseIndex(std::string dir, DenseMeta meta);
  // Reads DIR/dense.json and DIR/dense.faiss.
  explicit DenseIndex(std::string dir);
  ~DenseIndex();
  DenseIndex(const DenseIndex&) = delete;
  DenseIndex& operator=(const DenseIndex&) = delete;

  const DenseMeta& meta() const { return meta_; }
  DenseMeta& meta() { return meta_; }
  bool trained() const;
  // Trains an IVF index on n vectors (no-op for flat and hnsw).
  void train(const float* x, size_t n);
  // Adds n vectors [n][dims] with their passages' rowids.
  void add(const float* x, const int64_t* rowids, size_t n);
  bool contains(int64_t rowid) const;
  // Writes dense.faiss and dense.json (each through a temporary file and a rename).
  void save() const;

  // Throws Error when `sha256` is not the encoder the index was built with.
  void require_encoder(const std::string& sha256, const std::string& name) const;
  // The k nearest passages of each of n query vectors [n][dims]; FAISS runs the batch on its
  // OpenMP threads (set with set_threads). Results best first; fewer than k when the index holds
  // fewer vectors.
  std::vector<std::vector<Hit>> search(const float* q, size_t n, int k) const;
  // FAISS's OpenMP thread count (omp_set_num_threads); n <= 0 leaves the default.
  static void set_threads(int n);

 private:
  std::string dir_;
  DenseMeta meta_;
  std::unique_ptr<faiss::Index> index_;
  std::vector<int64_t> sorted_ids_;  // for contains(), filled on open and add
};

}  // namespace ragform::retrieval
