// dtbench-torch's end of a run (cli/jobs.h): the heartbeat thread a
// multi-rank job started (comm/liveness) must stop before static destructors
// run, for it may be inside a store request.
#include "cli/jobs.h"
#include "comm/liveness.h"

namespace dtbench::cli {

bool end_jobs() { return comm::stop_heartbeat(); }

}  // namespace dtbench::cli
