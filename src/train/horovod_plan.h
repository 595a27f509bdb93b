#pragma once
// The pure parts of `--reducer horovod`: Horovod 0.28.1's decisions about
// which ready tensors are reduced together, with no communication and no
// LibTorch (strategy_horovod.cc does the collectives). Read from Horovod's
// horovod/common/controller.cc (FuseResponses, TensorFusionThresholdBytes,
// the coordinator's message table) and response_cache.cc (the response cache
// and its bit positions); written anew here.
//
// Tensors are the model's parameters by index; a request names one tensor,
// its byte size on the wire and its dtype. Responses are performed in order;
// an allreduce response may hold several tensors (a fused group).
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace dtbench::train::horovod {

// Horovod's defaults (0.28.1, operations.cc): HOROVOD_FUSION_THRESHOLD 128 MiB,
// HOROVOD_CYCLE_TIME 1 ms, HOROVOD_CACHE_CAPACITY 1024.
constexpr double kDefaultFusionThresholdMb = 128;
constexpr double kDefaultCycleTimeMs = 1;
constexpr std::uint32_t kDefaultCacheCapacity = 1024;

enum class OpType : int { kAllreduce = 0, kBroadcast = 1 };

struct Request {
  std::size_t tensor = 0;
  std::int64_t bytes = 0;
  int dtype = 0;  // any code; tensors of different codes are never fused
  OpType type = OpType::kAllreduce;
};

struct Response {
  OpType type = OpType::kAllreduce;
  int dtype = 0;
  std::vector<std::size_t> tensors;  // in the order they lie in the fusion buffer
  std::int64_t bytes = 0;            // their sum
};

// Horovod's Controller::TensorFusionThresholdBytes on a homogeneous cluster:
// the threshold rounded up to a multiple of local_size x 8 bytes x 64 (so the
// buffer holds a multiple of 64 float64 per local rank). 0 stays 0 (fusion off).
std::int64_t fusion_threshold_bytes(std::int64_t proposed, int local_size);

// Horovod's FuseResponses: takes responses from the front; an allreduce
// absorbs the following ones of the same type and dtype while the sum stays
// within `threshold`; one that does not fit is skipped (looked past) as long
// as the skipped bytes also fit, and keeps its place for the next group.
// Broadcasts are never fused.
std::vector<Response> fuse(std::deque<Response> responses, std::int64_t threshold);

// Horovod's ResponseCache: responses that were performed before, by tensor,
// with a bit position each. A new tensor takes the next free position (or
// the least recently used one's when the cache is full, evicting it); a get
// makes the tensor the most recently used and keeps its position. Bits are
// the same on every rank because every rank puts and gets in the same order.
class ResponseCache {
 public:
  explicit ResponseCache(std::uint32_t capacity) : capacity_(capacity) {}
  std::uint32_t capacity() const { return capacity_; }
  bool cached(std::size_t tensor) const { return bit_of_.count(tensor) != 0; }
  std::uint32_t bit(std::size_t tensor) const { return bit_of_.at(tensor); }
  std::uint32_t num_active_bits() const { return static_cast<std::uint32_t>(at_bit_.size()); }
  // The cached response at `bit` (now the most recently used).
  const Response& get(std::uint32_t bit);
  const Response& peek(std::uint32_t bit) const { return at_bit_.at(bit)->second; }
  // Caches each tensor of `r` as a response of its own (a fused response is
  // split, as Horovod does). `bytes_of` gives each tensor's bytes.
  void put(const Response& r, const std::vector<std::int64_t>& bytes_of);
  std::size_t evictions() const { return evictions_; }

 private:
  using Entry = std::pair<std::size_t, Response>;  // tensor, its response
  std::uint32_t capacity_;
  std::list<Entry> lru_;  // front: most recently used
  std::vector<std::list<Entry>::iterator> at_bit_;
  std::unordered_map<std::size_t, std::uint32_t> bit_of_;
  std::size_t evictions_ = 0;
};

// The coordinator's (rank 0's) message table: a tensor is ready once every
// rank has requested it; tensors become ready in the order their last
// request arrived.
class MessageTable {
 public:
  explicit MessageTable(int size) : size_(size) {}
  // Records one rank's request of `tensor`; true when that makes it ready
  // (the entry is then removed).
  bool add(std::size_t tensor);
  std::size_t pending() const { return counts_.size(); }

 private:
  int size_;
  std::map<std::size_t, int> counts_;
};

// The negotiation of one cycle in Horovod's cache fast path: the sets every
// rank contributes are ANDed; status bits travel inverted in front of the
// cache bits (set = "not shutting down", "no uncached request", as Horovod's
// CacheCoordinator sends them), so one AND answers all of them.
constexpr int kStatusBits = 2;  // should-shut-down, uncached-in-queue
std::vector<std::int32_t> encode_cache_bits(const std::vector<std::uint32_t>& hits, bool shut_down,
                                            bool uncached, std::uint32_t num_bits);
struct CacheAgreement {
  std::vector<std::uint32_t> hits;  // common to every rank, ascending
  bool shut_down = false;           // some rank asks to shut down
  bool uncached = false;            // some rank has an uncached request
};
CacheAgreement decode_cache_bits(const std::vector<std::int32_t>& anded);

// A response list as one array of int64 (the coordinator broadcasts it):
// [shut_down, groups, then per group: type, dtype, count, tensors...].
std::vector<std::int64_t> encode_responses(const std::vector<Response>& rs, bool shut_down);
std::vector<Response> decode_responses(const std::int64_t* p, std::size_t n, bool& shut_down,
                                       const std::vector<std::int64_t>& bytes_of);
// The most int64s encode_responses needs for `tensors` tensors.
std::size_t max_encoded_responses(std::size_t tensors);

}  // namespace dtbench::train::horovod
