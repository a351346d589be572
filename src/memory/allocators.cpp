#include "memory/allocators.h"

#include <algorithm>

#include "core/error.h"

namespace dnncast::memory {

namespace {
constexpr int64_t kMinBlockSize = 512;
constexpr int64_t kSmallSize = 1 << 20;     // largest request served by the small pool
constexpr int64_t kSmallBuffer = 2 << 20;   // small pool segment
constexpr int64_t kLargeBuffer = 20 << 20;  // large pool segment for requests under kMinLargeAlloc
constexpr int64_t kMinLargeAlloc = 10 << 20;
constexpr int64_t kRoundLarge = 2 << 20;
}  // namespace

int64_t CudaCachingAllocatorModel::round_size(int64_t bytes) {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  return (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

int64_t CudaCachingAllocatorModel::segment_size(int64_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

void CudaCachingAllocatorModel::FreePool::emptied() {
  if (++empty_ <= 16 || 2 * empty_ <= sizes_.size()) return;
  size_t kept = 0;
  for (size_t at = 0; at < sizes_.size(); ++at) {
    if (blocks(at).empty()) {
      spare_.push_back(list_of_[at]);
      continue;
    }
    sizes_[kept] = sizes_[at];
    list_of_[kept] = list_of_[at];
    ++kept;
  }
  sizes_.resize(kept);
  list_of_.resize(kept);
  empty_ = 0;
}

int CudaCachingAllocatorModel::FreePool::take_best_fit(int64_t size) {
  auto at = static_cast<size_t>(std::lower_bound(sizes_.begin(), sizes_.end(), size) - sizes_.begin());
  while (at < sizes_.size() && blocks(at).empty()) ++at;
  if (at == sizes_.size()) return -1;
  std::vector<Entry>& list = blocks(at);
  const int id = list.back().id;  // the lowest address
  list.pop_back();
  if (list.empty()) emptied();
  return id;
}

void CudaCachingAllocatorModel::FreePool::insert(const Key& key) {
  auto found = std::lower_bound(sizes_.begin(), sizes_.end(), key.size);
  const auto at = static_cast<size_t>(found - sizes_.begin());
  const bool listed = found != sizes_.end() && *found == key.size;
  if (!listed) {
    sizes_.insert(found, key.size);
    int list = static_cast<int>(lists_.size());
    if (spare_.empty()) {
      lists_.emplace_back();
    } else {
      list = spare_.back();
      spare_.pop_back();
    }
    list_of_.insert(list_of_.begin() + static_cast<std::ptrdiff_t>(at), list);
  }
  std::vector<Entry>& list = blocks(at);
  if (listed && list.empty()) --empty_;  // a listed size filled again
  auto place = std::lower_bound(list.begin(), list.end(), key.address,
                                [](const Entry& entry, int64_t address) { return entry.address > address; });
  list.insert(place, Entry{key.address, key.id});
}

void CudaCachingAllocatorModel::FreePool::erase(const Key& key) {
  auto found = std::lower_bound(sizes_.begin(), sizes_.end(), key.size);
  DNNCAST_ASSERT(found != sizes_.end() && *found == key.size);
  const auto at = static_cast<size_t>(found - sizes_.begin());
  std::vector<Entry>& list = blocks(at);
  auto place = std::lower_bound(list.begin(), list.end(), key.address,
                                [](const Entry& entry, int64_t address) { return entry.address > address; });
  DNNCAST_ASSERT(place != list.end() && place->id == key.id);
  list.erase(place);
  if (list.empty()) emptied();
}

int CudaCachingAllocatorModel::new_block(const Block& block) {
  if (!free_block_ids_.empty()) {
    int id = free_block_ids_.back();
    free_block_ids_.pop_back();
    blocks_[static_cast<size_t>(id)] = block;
    return id;
  }
  blocks_.push_back(block);
  return static_cast<int>(blocks_.size()) - 1;
}

void CudaCachingAllocatorModel::malloc(int buffer, int64_t bytes) {
  const int64_t size = round_size(bytes);
  const bool small = size <= kSmallSize;
  int id = pool(small).take_best_fit(size);
  if (id < 0) {
    Block segment;
    segment.address = next_address_;
    segment.size = segment_size(size);
    segment.small = small;
    next_address_ += segment.size;
    reserved_ += segment.size;
    ++segments_;
    id = new_block(segment);
  }
  Block& block = blocks_[static_cast<size_t>(id)];
  const int64_t remaining = block.size - size;
  const bool split = small ? remaining >= kMinBlockSize : remaining > kSmallSize;
  if (split) {
    Block rest;
    rest.address = block.address + size;
    rest.size = remaining;
    rest.small = small;
    rest.prev = id;
    rest.next = block.next;
    int rest_id = new_block(rest);
    Block& owner = blocks_[static_cast<size_t>(id)];  // new_block may have reallocated
    if (owner.next >= 0) blocks_[static_cast<size_t>(owner.next)].prev = rest_id;
    owner.next = rest_id;
    owner.size = size;
    pool(small).insert({remaining, rest.address, rest_id});
  }
  Block& owner = blocks_[static_cast<size_t>(id)];
  owner.allocated = true;
  allocated_ += owner.size;
  if (static_cast<size_t>(buffer) >= block_of_buffer_.size())  // ids come dense and rising: grown by doubling
    block_of_buffer_.resize(std::max(static_cast<size_t>(buffer) + 1, 2 * block_of_buffer_.size()), -1);
  block_of_buffer_[static_cast<size_t>(buffer)] = id;
}

void CudaCachingAllocatorModel::free(int buffer) {
  DNNCAST_ASSERT(buffer >= 0 && static_cast<size_t>(buffer) < block_of_buffer_.size());
  int id = block_of_buffer_[static_cast<size_t>(buffer)];
  DNNCAST_ASSERT(id >= 0);
  block_of_buffer_[static_cast<size_t>(buffer)] = -1;
  Block& block = blocks_[static_cast<size_t>(id)];
  allocated_ -= block.size;
  block.allocated = false;
  // Merge with free neighbours of the same segment.
  auto absorb = [&](int neighbour) {
    Block& other = blocks_[static_cast<size_t>(neighbour)];
    pool(other.small).erase({other.size, other.address, neighbour});
  };
  int prev = blocks_[static_cast<size_t>(id)].prev;
  if (prev >= 0 && !blocks_[static_cast<size_t>(prev)].allocated) {
    absorb(prev);
    Block& left = blocks_[static_cast<size_t>(prev)];
    Block& self = blocks_[static_cast<size_t>(id)];
    left.size += self.size;
    left.next = self.next;
    if (self.next >= 0) blocks_[static_cast<size_t>(self.next)].prev = prev;
    free_block_ids_.push_back(id);
    id = prev;
  }
  int next = blocks_[static_cast<size_t>(id)].next;
  if (next >= 0 && !blocks_[static_cast<size_t>(next)].allocated) {
    absorb(next);
    Block& self = blocks_[static_cast<size_t>(id)];
    Block& right = blocks_[static_cast<size_t>(next)];
    self.size += right.size;
    self.next = right.next;
    if (right.next >= 0) blocks_[static_cast<size_t>(right.next)].prev = id;
    free_block_ids_.push_back(next);
  }
  const Block& merged = blocks_[static_cast<size_t>(id)];
  pool(merged.small).insert({merged.size, merged.address, id});
}

}  // namespace dnncast::memory
