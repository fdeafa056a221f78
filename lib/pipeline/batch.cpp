#include "pipeline/batch.h"

#include <algorithm>
#include <functional>
#include <string_view>

#include "pipeline/rows.h"

namespace goarchive::pipeline {

namespace {

size_t slot_of(std::string_view key, size_t mask) { return std::hash<std::string_view>{}(key) & mask; }

// Row i into the table, or over the slot of an earlier row with the same key: a key indexed twice finds its
// latest row.
void put(std::vector<uint32_t>& slots, const std::vector<std::string>& key, size_t i) {
  size_t mask = slots.size() - 1, at = slot_of(key[i], mask);
  while (slots[at] != 0 && key[slots[at] - 1] != key[i]) at = (at + 1) & mask;
  slots[at] = static_cast<uint32_t>(i + 1);
}

}  // namespace

void TableRows::index(std::string encoded_key, int owner) {
  root.push_back(owner);
  key.push_back(std::move(encoded_key));
  if (2 * key.size() > slots.size()) {  // at most half full: rebuilt at four times the keys, a power of two
    size_t size = 64;
    while (size < 4 * key.size()) size *= 2;
    slots.assign(size, 0);
    for (size_t i = 0; i + 1 < key.size(); ++i) put(slots, key, i);
  }
  put(slots, key, key.size() - 1);
}

std::optional<size_t> TableRows::find(const std::string& encoded_key) const {
  if (slots.empty()) return std::nullopt;
  size_t mask = slots.size() - 1;
  for (size_t at = slot_of(encoded_key, mask); slots[at] != 0; at = (at + 1) & mask) {
    if (key[slots[at] - 1] == encoded_key) return slots[at] - 1;
  }
  return std::nullopt;
}

std::vector<size_t> TableRows::rows_of(int owner) const {
  std::vector<size_t> out;
  for (size_t r = 0; r < root.size(); ++r) {
    if (root[r] == owner) out.push_back(r);
  }
  return out;
}

size_t Batch::count(RootFate f) const { return static_cast<size_t>(std::count(fate.begin(), fate.end(), f)); }

void Batch::leave(size_t root, RootFate f, const std::string& reason) {
  if (root >= fate.size() || fate[root] != RootFate::moved) return;
  fate[root] = f;
  if (reasons.size() < 5) reasons.push_back(reason);
}

std::vector<int> Batch::roots_with(RootFate f) const {
  std::vector<int> out;
  for (size_t i = 0; i < fate.size(); ++i) {
    if (fate[i] == f) out.push_back(static_cast<int>(i));
  }
  return out;
}

void Batch::drop_rows_of(const std::vector<bool>& drop) {
  if (std::none_of(drop.begin(), drop.end(), [](bool b) { return b; })) return;
  for (auto& tb : tables) {
    if (tb.rows.cols() == 0) continue;
    TableRows kept;
    kept.rows.set_columns(tb.rows.names());
    for (size_t r = 0; r < tb.size(); ++r) {
      int owner = tb.root[r];
      if (owner >= 0 && static_cast<size_t>(owner) < drop.size() && drop[static_cast<size_t>(owner)]) continue;
      append_row(kept.rows, tb.rows, r);
      kept.index(tb.key[r], owner);
    }
    tb = std::move(kept);
  }
}

bool same_tree(const Batch& a, const Batch& b, int root) {
  for (size_t t = 0; t < a.tables.size(); ++t) {
    const TableRows& ta = a.tables[t];
    const TableRows& tb = b.tables[t];
    std::vector<size_t> mine = ta.rows_of(root);
    if (mine.size() != tb.rows_of(root).size()) return false;
    for (size_t r : mine) {
      auto at = tb.find(ta.key[r]);
      if (!at || tb.root[*at] != root || !same_row(ta.rows, r, tb.rows, *at)) return false;
    }
  }
  return true;
}

void Batch::remove_root(size_t r) {
  std::vector<bool> drop(roots.size(), false);
  drop[r] = true;
  drop_rows_of(drop);
  for (auto& tb : tables) {
    for (auto& owner : tb.root) {
      if (owner > static_cast<int>(r)) --owner;
    }
  }
  root_keys.erase(root_keys.begin() + static_cast<long>(r));
  roots.erase(roots.begin() + static_cast<long>(r));
  if (r < fate.size()) fate.erase(fate.begin() + static_cast<long>(r));
}

void Batch::add_root(std::vector<std::string> key) {
  tracking::RootKey encoded = tracking::encode_key(key);
  add_root(std::move(encoded), std::move(key));
}

void Batch::add_root(tracking::RootKey encoded, std::vector<std::string> key) {
  roots.push_back(std::move(encoded));
  root_keys.push_back(std::move(key));
  fate.push_back(RootFate::moved);
}

}  // namespace goarchive::pipeline
