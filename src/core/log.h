#pragma once
// Minimal leveled logging to stderr, prefixed with the rank when known.
#include <string>

namespace dtbench::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

void set_level(Level level);
void set_rank(int rank);
void write(Level level, const std::string& msg);

inline void debug(const std::string& m) { write(Level::kDebug, m); }
inline void info(const std::string& m) { write(Level::kInfo, m); }
inline void warn(const std::string& m) { write(Level::kWarn, m); }
inline void error(const std::string& m) { write(Level::kError, m); }

}  // namespace dtbench::log
