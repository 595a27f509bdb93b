#pragma once
// How `dtbench project` shows a projection: the console table (with the
// inputs it rests on) and the JSON report (schema dtbench.project).
#include <ostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "project/layout_search.h"
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

// --search (search_reporter.cc): the inputs, then the best layouts, a line
// each (layout, strategy, local batch, tokens/s per rank, iteration,
// memory, what limits it); JSON with the same rows (schema dtbench.project,
// a "search" object beside them).
void write_search_table(std::ostream& out, const ComputeProfile& profile, const SearchOptions& s,
                        const SearchOutcome& outcome);
nlohmann::ordered_json search_json(const ComputeProfile& profile, const SearchOptions& s, const SearchOutcome& outcome);

}  // namespace dtbench::project
