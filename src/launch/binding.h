#pragma once
// Pinning launched ranks to cores (--bind). The launcher's own allowed CPUs
// (sched_getaffinity, so a cgroup, taskset or srun's binding is honoured) are
// grouped into physical cores (hwloc); with `core`, local rank i gets an equal
// share of whole cores, the next block in hwloc's order (mpirun's
// --map-by core --bind-to core, more than one core per rank when there are
// more cores than ranks; cores left over by the division stay unused, so every
// rank gets the same). Every thread a rank starts (intra-op pool, BLAS, Gloo's
// loop, a Python peer's) inherits the set. The plan is pure; reading the
// cores is the one call that asks the kernel.
#include <string>
#include <vector>

namespace dtbench::launch {

enum class Bind { none, core };

// "none" or "core"; anything else is a UsageError naming `flag`.
Bind parse_bind(const std::string& text, const std::string& flag = "--bind");

// A core: the OS indexes of its logical CPUs (hyperthreads) this process may use.
using CpuList = std::vector<int>;

// The cores this process may run on, in hwloc's order (package, core), each
// with only its allowed logical CPUs; cores with none allowed are left out.
// Throws IoError when the topology cannot be read.
std::vector<CpuList> allowed_cores();

// CPU sets for `nproc` local ranks under `bind` (empty for Bind::none):
// floor(cores / nproc) whole cores each, in order. UsageError when there are
// fewer cores than ranks (naming both counts and the CPUs).
std::vector<CpuList> plan_binding(Bind bind, const std::vector<CpuList>& cores, int nproc);

// "0-3,8,10-11" (sorted, ranges collapsed).
std::string describe_cpus(CpuList cpus);

// The CPUs the calling thread may run on (sched_getaffinity).
CpuList current_affinity();

// Pins the calling thread (and so everything it later starts or execs) to `cpus`.
// Throws IoError naming the CPUs when the kernel refuses.
void bind_this_thread(const CpuList& cpus);

// Pins every thread this process already has (/proc/self/task) to `cpus`, and
// so every one it starts later: for ranks that mpirun starts, which bind
// themselves at start-up (libraries may have started threads before main).
void bind_this_process(const CpuList& cpus);

// A plan for every local rank in one environment variable and back:
// "0;1" or "0-3;4-7" (describe_cpus per rank, ';' between ranks).
inline constexpr const char* kCpuPlanEnv = "DTBENCH_CPU_PLAN";
std::string encode_plan(const std::vector<CpuList>& plan);
// UsageError naming the variable on malformed text.
std::vector<CpuList> decode_plan(const std::string& text);

}  // namespace dtbench::launch
