// BM25 over SQLite FTS5: the passages and their full-text index in one file, DIR/index.sqlite.
//
// Schema:
//   passages(rowid INTEGER PRIMARY KEY, id TEXT UNIQUE, title, text, line, build)
//   passages_fts: FTS5 over (title, text), external content = passages (the text is stored once)
//   meta(key PRIMARY KEY, value): format version, tokenizer, builds
// Tokenizer: `porter unicode61 remove_diacritics 2` — Unicode 6.1 word characters, case folded,
// diacritics removed (also from composed code points, "2"), then Porter stemming of English words,
// so "Founded"/"founders"/"found" share a stem as a textbook English BM25 setup would.
//
// Ranking: SQLite's bm25() (FTS5 documentation, section "The bm25() function"): Okapi BM25 with
// k1 = 1.2, b = 0.75, IDF(q) = ln((N - n(q) + 0.5) / (n(q) + 0.5)) (floored at 1e-6), the term
// frequency summed over title and text and the document length = title + text tokens — BM25 over
// title + text. bm25() is negative (smaller is better); scores here are its negation.
//
// Queries: FTS5 ANDs bare terms, which finds almost nothing for a natural-language question, so a
// question becomes an OR of its whitespace-separated words, each double-quoted (a quote inside a
// word doubled, FTS5's string escape), duplicates, stop words (kStopWords) and words without a
// letter or digit left out:
//   who wrote "Hamlet"?  ->  "who" OR "wrote" OR """Hamlet""?"
// Inside quotes FTS5 tokenises the word itself, so punctuation never becomes query syntax.
// Stop words: Lucene's English stop set (EnglishAnalyzer / StopAnalyzer, the 33 words below, which
// Pyserini's BM25 also drops). In an OR query every stop word matches most of the corpus, so
// bm25() scores nearly every row for a near-zero IDF: dropping them changes the ranking little
// (recall@10 within 0.03 of the all-terms textbook reference, tests/retrieval) and the query time
// a lot on a large index (docs/performance.md). A question made only of stop words keeps them.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "retrieval/corpus.h"

namespace ragform::retrieval {

inline constexpr const char* kFts5Tokenizer = "porter unicode61 remove_diacritics 2";

inline constexpr const char* kStopWords[] = {
    "a",   "an",    "and",  "are",   "as",    "at",   "be",   "but", "by",  "for",  "if",
    "in",  "into",  "is",   "it",    "no",    "not",  "of",   "on",  "or",  "such", "that",
    "the", "their", "then", "there", "these", "they", "this", "to",  "was", "will", "with"};

// The FTS5 MATCH expression for a question (see above); empty when it has no searchable word.
// StopWords::keep quotes every word (the query before stop words were dropped; the benchmark's
// comparison).
enum class StopWords { drop, keep };
std::string fts5_query(std::string_view question, StopWords stop = StopWords::drop);

struct Hit {
  int64_t rowid = 0;  // the passage's row in index.sqlite (also its FAISS label)
  double score = 0;
};

struct StoredPassage {
  std::string id, title, text;
};

class Bm25Index {
 public:
  enum class Open { Read, Create, Append };
  // Read: DIR/index.sqlite must exist. Create: DIR must not hold an index (DIR is created).
  // Append: open an existing index to add to it (created when missing).
  Bm25Index(const std::string& dir, Open mode);
  ~Bm25Index();
  Bm25Index(const Bm25Index&) = delete;
  Bm25Index& operator=(const Bm25Index&) = delete;

  static std::string file_in(const std::string& dir);  // DIR/index.sqlite
  // Whether DIR holds an index; Error "DIR: <reason>" when that cannot be told (a directory on
  // the way that cannot be searched).
  static bool exists_in(const std::string& dir);
  // Error "DIR: already holds an index (use --append ...)" when it does.
  static void require_no_index(const std::string& dir);

  // --- building (Create / Append) ---
  enum class Added { New, AlreadyIndexed };
  // Adds p, returning its rowid. An id added by this build before throws eval::DataError
  // "<source>:<p.line>: duplicate id 'X' (first at line N)"; an id from an earlier build is
  // AlreadyIndexed when title and text are identical (a resumed or repeated --append), else the
  // same DataError naming the difference.
  std::pair<Added, int64_t> add(const Passage& p, const std::string& source);
  void begin();     // opens a write transaction
  void commit();    // commits it
  void optimize();  // merges FTS5 segments (faster queries); at the end of a build
  // At the end of a build: leaves WAL mode, so that the index reads in a read-only directory.
  void settle();

  // --- reading ---
  size_t size() const;
  // The k best passages for an FTS5 MATCH expression (fts5_query), best first.
  std::vector<Hit> search_match(const std::string& match, int k) const;
  std::vector<Hit> search(std::string_view question, int k) const {
    return search_match(fts5_query(question), k);
  }
  StoredPassage passage(int64_t rowid) const;
  std::optional<int64_t> rowid_of(const std::string& id) const;
  // Calls fn(rowid, passage) for every passage in rowid order.
  void for_each(const std::function<void(int64_t, const StoredPassage&)>& fn) const;
  std::string meta(const std::string& key) const;  // "" when absent

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ragform::retrieval
