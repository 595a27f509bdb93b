// `dtbench models`: every model with its parameter tensors, elements, size
// and FLOPs per example at the input `dtbench ddp` gives it by default.
// The command's flags; its run is models_job (cli/jobs/models.cc).
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/jobs.h"
#include "report/json_io.h"

namespace dtbench::cli {

Action register_models(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "models",
      "List the models: parameter tensors, elements, MB (float32), forward multiply-adds and training "
      "FLOPs per example at dtbench ddp's default input (images 224x224 or the model's minimum, "
      "128 tokens, 1024 features), description");
  auto f = std::make_shared<ModelsFlags>();
  cmd->add_option("--json", f->json_path, "Also write the list as JSON to this file");
  return [f]() {
    if (!f->json_path.empty()) report::require_writable_path(f->json_path, "--json");
    return models_job(*f);
  };
}

}  // namespace dtbench::cli
