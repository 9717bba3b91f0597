// The bytes an all-to-all moves between every pair of ranks, kept row by row as the pairs that
// carry any: on a large cluster an embedding plan's exchange touches few of them (a table-wise
// table's ids go to its one GPU and its vectors come back from there), so a 16,384-GPU matrix
// holds its few million pairs instead of 268 million, mostly zeros (2 GiB of doubles each).
//
// A row is a vector of (receiver, bytes) entries sorted by receiver. Bytes may be added in any
// order: a pair new to its row and below its last receiver waits in the row's pending list, and
// the list is folded in (sorted, each pair's bytes summed in the order they came) once it is as
// long as the row, and by consolidate(), which reading needs after such adds. Every pair's sum
// takes its terms in the order they were added. (Eigen's SparseMatrix would need each row's
// size before its first insertion, and would put Eigen in every header that names a byte
// matrix.)
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "engine/check.h"

namespace trainsim::models {

class ByteMatrix {
 public:
  struct Entry {
    int to;
    double bytes;
  };

  ByteMatrix() = default;
  explicit ByteMatrix(int ranks);
  // From dense rows: rows[from][to] (square).
  static ByteMatrix from_rows(const std::vector<std::vector<double>>& rows);

  // Ranks (rows and columns); 0 for a matrix that was never sized.
  int size() const { return static_cast<int>(rows_.size()); }
  bool empty() const { return rows_.empty(); }

  // Adds `bytes` to what `from` sends `to` (nothing for bytes <= 0: absent pairs carry 0).
  void add(int from, int to, double bytes);
  // Folds the pairs added out of order into their rows; the reads below need it after such adds.
  void consolidate();
  bool consolidated() const { return pending_ == 0; }
  // Appends a row's entries (ascending receivers, all above the row's last one), each shifted
  // by `offset`: a block of a larger matrix.
  void append(int from, std::span<const Entry> entries, int offset = 0);

  // Bytes from `from` to `to` (0 for a pair that carries none).
  double operator()(int from, int to) const;
  // Whether rank a + s sends rank b + s what a sends b, for every a and b (mod the ranks).
  bool repeats_every(int s) const;
  // The pairs `from` sends to, by ascending receiver; `first`..`last` (exclusive) restricts the
  // receivers.
  std::span<const Entry> row(int from) const {
    TRAINSIM_ASSERT(consolidated(), "a byte matrix read before consolidate()");
    return rows_[static_cast<std::size_t>(from)];
  }
  std::span<const Entry> row(int from, int first, int last) const;

  // Pairs held.
  std::size_t entries() const;
  // The matrix the other way: (to, from) holds what (from, to) holds, rows by ascending sender.
  ByteMatrix transposed() const;

  friend bool operator==(const ByteMatrix&, const ByteMatrix&);

 private:
  void fold(std::size_t from);

  std::vector<std::vector<Entry>> rows_;
  std::vector<std::vector<Entry>> pending_rows_;  // per row: pairs added out of order
  std::size_t pending_ = 0;                       // pairs in them
};

inline bool operator==(const ByteMatrix::Entry& a, const ByteMatrix::Entry& b) {
  return a.to == b.to && a.bytes == b.bytes;
}

}  // namespace trainsim::models
