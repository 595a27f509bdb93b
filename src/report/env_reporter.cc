#include "report/env_reporter.h"

#include <string>

namespace dtbench::report {
namespace {

std::string scalar(const nlohmann::ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

void print_object(std::ostream& out, const nlohmann::ordered_json& obj, const std::string& prefix) {
  for (const auto& [k, v] : obj.items()) {
    const std::string key = prefix.empty() ? k : prefix + "." + k;
    if (v.is_object()) {
      print_object(out, v, key);
    } else if (v.is_string() && v.get<std::string>().find('\n') != std::string::npos) {
      out << "# " << key << ":\n";
      const std::string text = v.get<std::string>();
      std::size_t start = 0;
      while (start < text.size()) {
        auto end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        out << "#   " << text.substr(start, end - start) << "\n";
        start = end + 1;
      }
    } else if (v.is_array()) {
      std::string line;
      for (const auto& e : v) line += (line.empty() ? "" : ", ") + scalar(e);
      out << "# " << key << ": " << (line.empty() ? "none" : line) << "\n";
    } else {
      out << "# " << key << ": " << scalar(v) << "\n";
    }
  }
}

}  // namespace

void print_env(std::ostream& out, const nlohmann::ordered_json& env) {
  print_object(out, env, "");
  out.flush();
}

}  // namespace dtbench::report
