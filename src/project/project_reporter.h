#pragma once
// How `dtbench project` shows a projection: the console table (with the
// inputs it rests on) and the JSON report (schema dtbench.project).
#include <ostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "project/projection.h"

namespace dtbench::project {

void write_projection_table(std::ostream& out, const ComputeProfile& profile, const ProjectOptions& opts,
                            const std::vector<ProjectionRow>& rows);

nlohmann::ordered_json projection_json(const ComputeProfile& profile, const ProjectOptions& opts,
                                       const std::vector<ProjectionRow>& rows);

}  // namespace dtbench::project
