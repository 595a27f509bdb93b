// dtbench-torch's start and end of a run (cli/jobs.h). At the start the
// process takes the front end's name, so that tools that go by a process's
// name (pgrep -x, killall, ps -C, top) find a running job as `dtbench`; at
// the end the heartbeat thread a multi-rank job started (comm/liveness) must
// stop before static destructors run, for it may be inside a store request.
#include <sys/prctl.h>

#include "cli/jobs.h"
#include "comm/liveness.h"
#include "launch/launcher.h"

namespace dtbench::cli {

void begin_jobs() { prctl(PR_SET_NAME, launch::kFrontEndName, 0, 0, 0); }

bool end_jobs() { return comm::stop_heartbeat(); }

}  // namespace dtbench::cli
