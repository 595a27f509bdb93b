#pragma once
// The data-parallel strategies `dtbench project` projects, as `dtbench ddp
// --reducer` runs them: replicated DDP and Horovod's tensor fusion, ZeRO
// stage 1 (optimizer state sharded), stage 2 (gradients too) and FSDP
// (ZeRO-3: parameters too, per unit). Torch-free.
#include <string>
#include <vector>

namespace dtbench::project {

enum class Strategy { kDdp, kHorovod, kZero1, kZero2, kFsdp };

// zero1, zero2, fsdp.
bool is_sharded(Strategy s);

const char* strategy_name(Strategy s);
// "ddp", "horovod", "zero1", "zero2" or "fsdp"; throws UsageError naming the valid ones.
Strategy parse_strategy(const std::string& text);
// A comma-separated list of them (at least one, no repeats).
std::vector<Strategy> parse_strategies(const std::string& text);

}  // namespace dtbench::project
