#pragma once
// How `dtbench project` shows a projection: the console table (with the
// inputs it rests on) and the JSON report (schema dtbench.project).
#include <ostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "project/projection.h"

namespace dtbench::project {

// One strategy's projection: the options it ran with and its rows.
struct StrategyProjection {
  ProjectOptions options;
  std::vector<ProjectionRow> rows;
};

// One strategy's table (the inputs, then a row per world size with the
// memory per rank and, with a limit, whether it fits and the largest batch).
void write_projection_table(std::ostream& out, const ComputeProfile& profile, const ProjectOptions& opts,
                            const std::vector<ProjectionRow>& rows);

// Every strategy's rows in one report (each row names its strategy).
nlohmann::ordered_json projection_json(const ComputeProfile& profile, const std::vector<StrategyProjection>& all);

}  // namespace dtbench::project
