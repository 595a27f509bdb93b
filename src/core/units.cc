#include "core/units.h"

#include <cctype>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Splits "64MiB" into 64 and "mib"; throws if there is no leading number.
double split_number(const std::string& text, const std::string& what, std::string* suffix) {
  std::size_t pos = 0;
  double value = 0;
  try {
    value = std::stod(text, &pos);
  } catch (const std::exception&) {
    throw UsageError(fmt::format("{}: '{}' is not a number", what, text));
  }
  if (!std::isfinite(value)) throw UsageError(fmt::format("{}: '{}' is not finite", what, text));
  *suffix = lower(text.substr(pos));
  while (!suffix->empty() && suffix->front() == ' ') suffix->erase(0, 1);
  return value;
}

}  // namespace

std::uint64_t parse_bytes(const std::string& text, const std::string& what) {
  std::string suffix;
  const double value = split_number(text, what, &suffix);
  if (value < 0) throw UsageError(fmt::format("{}: '{}' is negative", what, text));
  double mult = 1;
  if (suffix.empty() || suffix == "b") {
    mult = 1;
  } else if (suffix == "k" || suffix == "kb" || suffix == "kib") {
    mult = 1024.0;
  } else if (suffix == "m" || suffix == "mb" || suffix == "mib") {
    mult = 1024.0 * 1024;
  } else if (suffix == "g" || suffix == "gb" || suffix == "gib") {
    mult = 1024.0 * 1024 * 1024;
  } else if (suffix == "t" || suffix == "tb" || suffix == "tib") {
    mult = 1024.0 * 1024 * 1024 * 1024;
  } else {
    throw UsageError(fmt::format("{}: unknown unit in '{}' (use B, K, M, G or T)", what, text));
  }
  const double bytes = value * mult;
  if (bytes > 1e18) throw UsageError(fmt::format("{}: '{}' is too large", what, text));
  if (bytes != std::floor(bytes))
    throw UsageError(fmt::format("{}: '{}' is not a whole number of bytes", what, text));
  return static_cast<std::uint64_t>(bytes);
}

std::chrono::milliseconds parse_duration(const std::string& text, const std::string& what) {
  std::string suffix;
  const double value = split_number(text, what, &suffix);
  double ms = 0;
  if (suffix.empty() || suffix == "s") {
    ms = value * 1000;
  } else if (suffix == "ms") {
    ms = value;
  } else if (suffix == "m" || suffix == "min") {
    ms = value * 60000;
  } else {
    throw UsageError(fmt::format("{}: unknown unit in '{}' (use ms, s or m)", what, text));
  }
  if (ms <= 0) throw UsageError(fmt::format("{}: '{}' must be positive", what, text));
  if (ms > 7.0 * 24 * 3600 * 1000)
    throw UsageError(fmt::format("{}: '{}' is longer than a week", what, text));
  return std::chrono::milliseconds(static_cast<std::int64_t>(ms));
}

double parse_bandwidth(const std::string& text, const std::string& what) {
  std::string body = text;
  double times = 1;
  const auto x = lower(text).find('x');
  if (x != std::string::npos && x > 0 && x + 1 < text.size() &&
      std::isdigit(static_cast<unsigned char>(text[x + 1]))) {
    const auto n = parse_number(text.substr(0, x));
    if (!n || *n <= 0 || *n != std::floor(*n))
      throw UsageError(fmt::format("{}: '{}': the count before 'x' must be a positive whole number", what, text));
    times = *n;
    body = text.substr(x + 1);
  }
  std::string lowered;
  const double value = split_number(body, what, &lowered);
  // The unit in its own case ("Gb" is bits, "GB" bytes), without "/s" or "ps".
  std::string unit = body.substr(body.size() - lowered.size());
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  for (const char* tail : {"/s", "ps"})
    if (unit.size() > 2 && lower(unit.substr(unit.size() - 2)) == tail) unit.resize(unit.size() - 2);
  const std::string u = lower(unit);
  double scale = 0;  // of the unit's prefix
  std::string rest;
  if (!u.empty() && (u[0] == 'k' || u[0] == 'm' || u[0] == 'g' || u[0] == 't')) {
    scale = u[0] == 'k' ? 1e3 : u[0] == 'm' ? 1e6 : u[0] == 'g' ? 1e9 : 1e12;
    rest = unit.substr(1);
  } else {
    scale = 1;
    rest = unit;
  }
  double mult = -1;
  if (lower(rest) == "bit" || rest == "b") mult = scale / 8;  // bits
  else if (rest == "B") mult = scale;                         // bytes
  if (mult < 0 || unit.empty())
    throw UsageError(fmt::format("{}: unknown or missing unit in '{}' (use e.g. 100Gbit/s, 100Gb/s, 12.5GB/s, 800MB/s)",
                                 what, text));
  if (value <= 0) throw UsageError(fmt::format("{}: '{}' must be positive", what, text));
  return times * value * mult;
}

double parse_seconds(const std::string& text, const std::string& what) {
  std::string suffix;
  const double value = split_number(text, what, &suffix);
  if (value < 0) throw UsageError(fmt::format("{}: '{}' is negative", what, text));
  double mult = 0;
  if (suffix == "s") mult = 1;
  else if (suffix == "ms") mult = 1e-3;
  else if (suffix == "us") mult = 1e-6;
  else if (suffix == "ns") mult = 1e-9;
  else if (suffix.empty() && value == 0) mult = 1;
  else throw UsageError(fmt::format("{}: unknown or missing unit in '{}' (use s, ms, us or ns)", what, text));
  return value * mult;
}

std::string format_bytes(std::uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  if (v == std::floor(v)) return fmt::format("{} {}", static_cast<std::uint64_t>(v), kUnits[unit]);
  return fmt::format("{:.1f} {}", v, kUnits[unit]);
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::optional<double> parse_number(const std::string& item) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(item, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (item.empty() || used != item.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace dtbench
