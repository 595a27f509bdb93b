#include "train/horovod_plan.h"

#include <stdexcept>

namespace dtbench::train::horovod {

std::int64_t fusion_threshold_bytes(std::int64_t proposed, int local_size) {
  if (proposed <= 0) return 0;
  const std::int64_t div = static_cast<std::int64_t>(local_size < 1 ? 1 : local_size) * 8 * 64;
  return (proposed + div - 1) / div * div;
}

std::vector<Response> fuse(std::deque<Response> responses, std::int64_t threshold) {
  std::vector<Response> out;
  while (!responses.empty()) {
    Response r = std::move(responses.front());
    responses.pop_front();
    if (r.type == OpType::kAllreduce) {
      std::deque<Response> skipped;
      std::int64_t skipped_bytes = 0;
      while (!responses.empty()) {
        Response& next = responses.front();
        if (next.type == r.type && next.dtype == r.dtype && r.bytes + next.bytes <= threshold) {
          r.tensors.insert(r.tensors.end(), next.tensors.begin(), next.tensors.end());
          r.bytes += next.bytes;
          responses.pop_front();
        } else {
          // Look past a response that does not fit while the skipped bytes
          // would still fit (mixed dtypes arrive interleaved).
          skipped_bytes += next.bytes;
          if (r.bytes + skipped_bytes > threshold) break;
          skipped.push_back(std::move(next));
          responses.pop_front();
        }
      }
      while (!skipped.empty()) {
        responses.push_front(std::move(skipped.back()));
        skipped.pop_back();
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

const Response& ResponseCache::get(std::uint32_t bit) {
  auto it = at_bit_.at(bit);
  lru_.splice(lru_.begin(), lru_, it);
  return lru_.front().second;
}

void ResponseCache::put(const Response& r, const std::vector<std::int64_t>& bytes_of) {
  if (capacity_ == 0) return;
  for (std::size_t t : r.tensors) {
    Response single{r.type, r.dtype, {t}, bytes_of.at(t)};
    auto known = bit_of_.find(t);
    if (known != bit_of_.end()) {
      auto it = at_bit_[known->second];
      it->second = single;
      lru_.splice(lru_.begin(), lru_, it);
      continue;
    }
    std::uint32_t bit;
    if (lru_.size() == capacity_) {
      // Full: the least recently used leaves and its bit is reused.
      bit = bit_of_.at(lru_.back().first);
      bit_of_.erase(lru_.back().first);
      lru_.pop_back();
      ++evictions_;
    } else {
      bit = static_cast<std::uint32_t>(at_bit_.size());
      at_bit_.emplace_back();
    }
    lru_.emplace_front(t, single);
    at_bit_[bit] = lru_.begin();
    bit_of_[t] = bit;
  }
}

bool MessageTable::add(std::size_t tensor) {
  const int n = ++counts_[tensor];
  if (n < size_) return false;
  counts_.erase(tensor);
  return true;
}

std::vector<std::int32_t> encode_cache_bits(const std::vector<std::uint32_t>& hits, bool shut_down,
                                            bool uncached, std::uint32_t num_bits) {
  std::vector<std::int32_t> v(kStatusBits + num_bits, 0);
  v[0] = shut_down ? 0 : 1;
  v[1] = uncached ? 0 : 1;
  for (auto b : hits) v.at(kStatusBits + b) = 1;
  return v;
}

CacheAgreement decode_cache_bits(const std::vector<std::int32_t>& anded) {
  CacheAgreement a;
  if (anded.size() < kStatusBits) throw std::invalid_argument("cache bit vector too short");
  a.shut_down = anded[0] == 0;
  a.uncached = anded[1] == 0;
  for (std::size_t i = kStatusBits; i < anded.size(); ++i)
    if (anded[i] != 0) a.hits.push_back(static_cast<std::uint32_t>(i - kStatusBits));
  return a;
}

std::vector<std::int64_t> encode_responses(const std::vector<Response>& rs, bool shut_down) {
  std::vector<std::int64_t> v{shut_down ? 1 : 0, static_cast<std::int64_t>(rs.size())};
  for (const auto& r : rs) {
    v.push_back(static_cast<std::int64_t>(r.type));
    v.push_back(r.dtype);
    v.push_back(static_cast<std::int64_t>(r.tensors.size()));
    for (auto t : r.tensors) v.push_back(static_cast<std::int64_t>(t));
  }
  return v;
}

std::vector<Response> decode_responses(const std::int64_t* p, std::size_t n, bool& shut_down,
                                       const std::vector<std::int64_t>& bytes_of) {
  if (n < 2) throw std::invalid_argument("response list too short");
  shut_down = p[0] != 0;
  const auto groups = p[1];
  std::size_t at = 2;
  std::vector<Response> out;
  for (std::int64_t g = 0; g < groups; ++g) {
    if (at + 3 > n) throw std::invalid_argument("response list truncated");
    Response r;
    r.type = static_cast<OpType>(p[at]);
    r.dtype = static_cast<int>(p[at + 1]);
    const auto count = static_cast<std::size_t>(p[at + 2]);
    at += 3;
    if (at + count > n) throw std::invalid_argument("response list truncated");
    for (std::size_t i = 0; i < count; ++i) {
      const auto t = static_cast<std::size_t>(p[at + i]);
      r.tensors.push_back(t);
      r.bytes += bytes_of.at(t);
    }
    at += count;
    out.push_back(std::move(r));
  }
  return out;
}

std::size_t max_encoded_responses(std::size_t tensors) { return 2 + 4 * tensors; }

}  // namespace dtbench::train::horovod
