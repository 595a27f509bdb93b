#pragma once
// Template definitions of json_io.h.
#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::report {

template <typename T>
T json_field(const Json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key))
    throw UsageError(fmt::format("{}: missing key '{}'", where, key));
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw UsageError(fmt::format("{}: key '{}' has the wrong type", where, key));
  }
}

}  // namespace dtbench::report
