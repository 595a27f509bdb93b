// `dtbench models`: every model with its parameter tensors, elements and size.
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "models/model.h"
#include "report/json_io.h"

namespace dtbench::cli {

Action register_models(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "models", "List the models: parameter tensors, elements, MB (float32), description");
  auto json_path = std::make_shared<std::string>();
  cmd->add_option("--json", *json_path, "Also write the list as JSON to this file");
  return [json_path]() {
    if (!json_path->empty()) report::require_writable_path(*json_path, "--json");
    std::cout << fmt::format("{:<18} {:>8} {:>13} {:>10}  {}\n", "model", "tensors", "elements",
                             "MB", "description");
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& entry : models::model_registry()) {
      std::int64_t tensors = 0, elements = 0;
      if (entry.count_parameters) {  // from the shapes: no multi-GB model made to count it
        elements = entry.count_parameters(entry.defaults);
        tensors = -1;
      } else {
        auto model = entry.make(entry.defaults);
        for (const auto& p : model->module()->parameters()) {
          ++tensors;
          elements += p.numel();
        }
      }
      const double mb = static_cast<double>(elements) * 4 / 1e6;
      std::cout << fmt::format("{:<18} {:>8} {:>13} {:>10.1f}  {}\n", entry.name,
                               tensors >= 0 ? std::to_string(tensors) : std::string("-"), elements, mb,
                               entry.description);
      std::cout.flush();
      list.push_back({{"name", entry.name},
                      {"tensors", tensors >= 0 ? nlohmann::ordered_json(tensors) : nlohmann::ordered_json()},
                      {"elements", elements},
                      {"megabytes_fp32", mb},
                      {"description", entry.description}});
    }
    if (!json_path->empty()) report::write_json_atomic(*json_path, list);
    return 0;
  };
}

}  // namespace dtbench::cli
