// `dtbench models`'s run: builds each model (or counts it from its shapes)
// and prints the table.
#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "cli/jobs.h"
#include "models/model.h"
#include "report/json_io.h"
#include "train/flops.h"
#include "train/train_options.h"

namespace dtbench::cli {

int models_job(const ModelsFlags& f) {
  std::cout << fmt::format("{:<18} {:>8} {:>13} {:>10} {:>10} {:>12} {:>11}  {}\n", "model", "tensors",
                           "elements", "MB", "input", "fwd GMAC/ex", "train GFLOP", "description");
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  const train::TrainOptions defaults;
  for (const auto& entry : models::model_registry()) {
    std::int64_t tensors = 0, elements = 0;
    double macs = 0;
    std::string input;
    if (entry.count_parameters && entry.forward_macs) {  // from the shapes: no multi-GB model made
      elements = entry.count_parameters(entry.defaults);
      tensors = -1;
      macs = entry.forward_macs(entry.defaults, defaults.seq_len);
      input = fmt::format("{} tok", defaults.seq_len);
    } else {
      auto model = entry.make(entry.defaults);
      for (const auto& p : model->module()->parameters()) {
        ++tensors;
        elements += p.numel();
      }
      model.reset();
      train::TrainOptions o;
      o.model = entry.name;
      o.image_size = std::max(defaults.image_size, entry.min_image_size);
      macs = train::measure_forward_cost(o).macs_per_example;
      input = entry.input == models::InputKind::kImage    ? fmt::format("{0}x{0}", o.image_size)
              : entry.input == models::InputKind::kTokens ? fmt::format("{} tok", o.seq_len)
                                                          : fmt::format("{} feat", entry.defaults.in_features);
    }
    const double mb = static_cast<double>(elements) * 4 / 1e6;
    const double train_flops = 6 * macs;  // forward + backward ~ 3 forward passes, 2 FLOPs per MAC
    std::cout << fmt::format("{:<18} {:>8} {:>13} {:>10.1f} {:>10} {:>12.3f} {:>11.2f}  {}\n", entry.name,
                             tensors >= 0 ? std::to_string(tensors) : std::string("-"), elements, mb,
                             input, macs / 1e9, train_flops / 1e9, entry.description);
    std::cout.flush();
    list.push_back({{"name", entry.name},
                    {"tensors", tensors >= 0 ? nlohmann::ordered_json(tensors) : nlohmann::ordered_json()},
                    {"elements", elements},
                    {"megabytes_fp32", mb},
                    {"input", input},
                    {"forward_macs_per_example", macs},
                    {"train_flops_per_example", train_flops},
                    {"description", entry.description}});
  }
  if (!f.json_path.empty()) report::write_json_atomic(f.json_path, list);
  return 0;
}

}  // namespace dtbench::cli
