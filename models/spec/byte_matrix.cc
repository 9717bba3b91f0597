#include "models/spec/byte_matrix.h"

#include <algorithm>

#include "engine/check.h"

namespace trainsim::models {

namespace {

bool before(const ByteMatrix::Entry& e, int to) { return e.to < to; }

}  // namespace

ByteMatrix::ByteMatrix(int ranks)
    : rows_(static_cast<std::size_t>(std::max(0, ranks))), pending_rows_(rows_.size()) {}

ByteMatrix ByteMatrix::from_rows(const std::vector<std::vector<double>>& rows) {
  ByteMatrix m(static_cast<int>(rows.size()));
  for (std::size_t a = 0; a < rows.size(); ++a) {
    TRAINSIM_ASSERT(rows[a].size() == rows.size(), "byte matrix is not square");
    for (std::size_t b = 0; b < rows.size(); ++b) {
      m.add(static_cast<int>(a), static_cast<int>(b), rows[a][b]);
    }
  }
  return m;
}

void ByteMatrix::add(int from, int to, double bytes) {
  TRAINSIM_ASSERT(from >= 0 && from < size() && to >= 0 && to < size(), "pair outside the matrix");
  if (!(bytes > 0)) return;
  std::vector<Entry>& r = rows_[static_cast<std::size_t>(from)];
  if (r.empty() || r.back().to < to) {
    r.push_back({to, bytes});
    return;
  }
  auto it = std::lower_bound(r.begin(), r.end(), to, before);
  if (it != r.end() && it->to == to) {
    it->bytes += bytes;
    return;
  }
  // New to the row and below its last receiver: it waits (a receiver waiting here stays below
  // the row's last one, so its later bytes wait here too, in order).
  std::vector<Entry>& waiting = pending_rows_[static_cast<std::size_t>(from)];
  waiting.push_back({to, bytes});
  ++pending_;
  if (waiting.size() >= std::max<std::size_t>(16, r.size())) fold(static_cast<std::size_t>(from));
}

void ByteMatrix::fold(std::size_t from) {
  std::vector<Entry>& waiting = pending_rows_[from];
  if (waiting.empty()) return;
  std::stable_sort(waiting.begin(), waiting.end(),
                   [](const Entry& a, const Entry& b) { return a.to < b.to; });
  const std::vector<Entry>& r = rows_[from];
  std::vector<Entry> merged;
  merged.reserve(r.size() + waiting.size());
  std::size_t i = 0;
  for (std::size_t j = 0; j < waiting.size();) {
    while (i < r.size() && r[i].to < waiting[j].to) merged.push_back(r[i++]);
    // Never in the row itself: a receiver there takes its bytes there.
    Entry e = waiting[j++];
    while (j < waiting.size() && waiting[j].to == e.to) e.bytes += waiting[j++].bytes;
    merged.push_back(e);
  }
  merged.insert(merged.end(), r.begin() + static_cast<std::ptrdiff_t>(i), r.end());
  rows_[from] = std::move(merged);
  pending_ -= waiting.size();
  waiting.clear();
  waiting.shrink_to_fit();
}

void ByteMatrix::consolidate() {
  for (std::size_t from = 0; pending_ > 0 && from < rows_.size(); ++from) fold(from);
}

void ByteMatrix::append(int from, std::span<const Entry> entries, int offset) {
  TRAINSIM_ASSERT(from >= 0 && from < size(), "row outside the matrix");
  std::vector<Entry>& r = rows_[static_cast<std::size_t>(from)];
  if (r.empty()) r.reserve(entries.size());
  for (const Entry& e : entries) {
    const int to = e.to + offset;
    TRAINSIM_ASSERT(to >= 0 && to < size() && (r.empty() || r.back().to < to),
                    "entries outside the matrix or out of order");
    TRAINSIM_ASSERT(e.bytes > 0, "an entry without bytes");
    r.push_back({to, e.bytes});
  }
}

double ByteMatrix::operator()(int from, int to) const {
  TRAINSIM_ASSERT(consolidated(), "a byte matrix read before consolidate()");
  const std::vector<Entry>& r = rows_[static_cast<std::size_t>(from)];
  auto it = std::lower_bound(r.begin(), r.end(), to, before);
  return it != r.end() && it->to == to ? it->bytes : 0.0;
}

bool ByteMatrix::repeats_every(int s) const {
  const int p = size();
  for (int a = 0; a < p; ++a) {
    const int shifted = (a + s) % p;
    if (row(a).size() != row(shifted).size()) return false;
    for (const Entry& e : row(a)) {
      if ((*this)(shifted, (e.to + s) % p) != e.bytes) return false;
    }
  }
  return true;
}

std::span<const ByteMatrix::Entry> ByteMatrix::row(int from, int first, int last) const {
  TRAINSIM_ASSERT(consolidated(), "a byte matrix read before consolidate()");
  const std::vector<Entry>& r = rows_[static_cast<std::size_t>(from)];
  auto begin = std::lower_bound(r.begin(), r.end(), first, before);
  auto end = std::lower_bound(begin, r.end(), last, before);
  return {r.data() + (begin - r.begin()), static_cast<std::size_t>(end - begin)};
}

std::size_t ByteMatrix::entries() const {
  TRAINSIM_ASSERT(consolidated(), "a byte matrix read before consolidate()");
  std::size_t n = 0;
  for (const auto& r : rows_) n += r.size();
  return n;
}

ByteMatrix ByteMatrix::transposed() const {
  TRAINSIM_ASSERT(consolidated(), "a byte matrix read before consolidate()");
  ByteMatrix t(size());
  std::vector<std::size_t> counts(rows_.size(), 0);
  for (const auto& r : rows_) {
    for (const Entry& e : r) ++counts[static_cast<std::size_t>(e.to)];
  }
  for (std::size_t i = 0; i < rows_.size(); ++i) t.rows_[i].reserve(counts[i]);
  for (std::size_t from = 0; from < rows_.size(); ++from) {
    for (const Entry& e : rows_[from]) {
      t.rows_[static_cast<std::size_t>(e.to)].push_back({static_cast<int>(from), e.bytes});
    }
  }
  return t;
}

bool operator==(const ByteMatrix& a, const ByteMatrix& b) {
  TRAINSIM_ASSERT(a.consolidated() && b.consolidated(), "a byte matrix read before consolidate()");
  return a.rows_ == b.rows_;
}

}  // namespace trainsim::models
