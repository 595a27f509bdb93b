#pragma once
// The compute profile of `dtbench project` from its options: a `dtbench ddp`
// report (--profile; with --batch-size/--seq-len moved to that shape), or a
// model by its layers with phase times or an achieved rate (--model), plus
// --measured reports' rows.
#include "cli/project_flags.h"
#include "project/projection.h"

namespace dtbench::cli {

// Throws UsageError with one line for what the options or reports lack.
project::ComputeProfile project_profile(const ProjectFlags& f);

}  // namespace dtbench::cli
