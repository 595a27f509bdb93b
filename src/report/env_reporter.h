#pragma once
// Prints the environment header (the JSON of `dtbench env`) as "# key: value"
// lines, the way nccl-tests opens its output.
#include <ostream>

#include <nlohmann/json.hpp>

namespace dtbench::report {

void print_env(std::ostream& out, const nlohmann::ordered_json& env);

}  // namespace dtbench::report
