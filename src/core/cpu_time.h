#pragma once
// CPU seconds this process has used so far (user + system, every thread),
// from getrusage(RUSAGE_SELF). Over an interval, the difference divided by
// the wall seconds is how many cores the process kept busy: what `dtbench
// comm` reports as a collective's cpu_util, and `dtbench project` uses for
// its CPU contention term.
namespace dtbench {

double process_cpu_seconds();

// Seconds of CPU the hypervisor took from this machine's virtual CPUs so
// far, summed over them ("steal" in /proc/stat); -1 where the kernel does
// not report it. Over an interval, time a process was ready to run but its
// virtual CPU was not: wall time that no work and no wait of the program
// explains.
double host_steal_seconds();

}  // namespace dtbench
