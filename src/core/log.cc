#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace dtbench::log {
namespace {

Level initial_level() {
  const char* v = std::getenv("DTBENCH_LOG");
  if (v == nullptr) return Level::kInfo;
  const std::string s(v);
  if (s == "debug") return Level::kDebug;
  if (s == "warn") return Level::kWarn;
  if (s == "error") return Level::kError;
  return Level::kInfo;
}

std::atomic<int> g_level{static_cast<int>(initial_level())};
std::atomic<int> g_rank{-1};

}  // namespace

void set_level(Level level) { g_level = static_cast<int>(level); }
void set_rank(int rank) { g_rank = rank; }

void write(Level level, const std::string& msg) {
  if (static_cast<int>(level) < g_level) return;
  static const char* kNames[] = {"debug", "info", "warning", "error"};
  const int rank = g_rank;
  std::string line = "dtbench";
  if (rank >= 0) line += "[rank " + std::to_string(rank) + "]";
  line += ": ";
  line += kNames[static_cast<int>(level)];
  line += ": " + msg + "\n";
  std::fputs(line.c_str(), stderr);
}

}  // namespace dtbench::log
