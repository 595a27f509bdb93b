#pragma once
// CPU seconds this process has used so far (user + system, every thread),
// from getrusage(RUSAGE_SELF). Over an interval, the difference divided by
// the wall seconds is how many cores the process kept busy: what `dtbench
// comm` reports as a collective's cpu_util, and `dtbench project` uses for
// its CPU contention term.
namespace dtbench {

double process_cpu_seconds();

}  // namespace dtbench
