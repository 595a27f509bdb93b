#pragma once
// The data-parallel strategies `dtbench project` projects, as `dtbench ddp
// --reducer` runs them: replicated DDP, ZeRO stage 1 (optimizer state
// sharded), stage 2 (gradients too) and FSDP (ZeRO-3: parameters too, per
// unit). Torch-free.
#include <string>
#include <vector>

namespace dtbench::project {

enum class Sharding { kDdp, kZero1, kZero2, kFsdp };

const char* sharding_name(Sharding s);
// "ddp", "zero1", "zero2" or "fsdp"; throws UsageError naming the valid ones.
Sharding parse_sharding(const std::string& text);
// A comma-separated list of them (at least one, no repeats).
std::vector<Sharding> parse_shardings(const std::string& text);

}  // namespace dtbench::project
