#pragma once
// Template definitions of json_io.h.
#include <limits>
#include <type_traits>

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::report {
namespace detail {

// j as T, strictly: integers must be JSON integers within T's range (no
// 1e308 cast into an int), everything else as nlohmann converts it.
template <typename T>
T json_get_checked(const Json& j, const char* key, const std::string& where) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    bool fits = false;
    if (j.is_number_unsigned()) {
      fits = j.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    } else if (j.is_number_integer()) {
      const auto v = j.get<std::int64_t>();
      fits = v >= static_cast<std::int64_t>(std::numeric_limits<T>::min()) &&
             (v < 0 || static_cast<std::uint64_t>(v) <= static_cast<std::uint64_t>(std::numeric_limits<T>::max()));
    } else {
      throw UsageError(fmt::format("{}: key '{}' has the wrong type (an integer is expected)", where, key));
    }
    if (!fits) throw UsageError(fmt::format("{}: key '{}' is out of range", where, key));
    return j.get<T>();
  } else {
    try {
      return j.get<T>();
    } catch (const nlohmann::json::exception&) {
      throw UsageError(fmt::format("{}: key '{}' has the wrong type", where, key));
    }
  }
}

}  // namespace detail

template <typename T>
T json_field(const Json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key))
    throw UsageError(fmt::format("{}: missing key '{}'", where, key));
  return detail::json_get_checked<T>(j.at(key), key, where);
}

template <typename T>
T json_value_or(const Json& j, const char* key, T fallback, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || j.at(key).is_null()) return fallback;
  return detail::json_get_checked<T>(j.at(key), key, where);
}

}  // namespace dtbench::report
