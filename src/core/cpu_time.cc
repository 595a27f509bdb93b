#include "core/cpu_time.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace dtbench {

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

double host_steal_seconds() {
  // "cpu  user nice system idle iowait irq softirq steal guest guest_nice",
  // in clock ticks; steal since Linux 2.6.11.
  std::ifstream in("/proc/stat");
  std::string line, name;
  if (!std::getline(in, line)) return -1;
  std::istringstream fields(line);
  fields >> name;
  long long v = 0, steal = -1;
  for (int i = 0; i < 8 && fields >> v; ++i)
    if (i == 7) steal = v;
  const long ticks = sysconf(_SC_CLK_TCK);
  if (name != "cpu" || steal < 0 || ticks <= 0) return -1;
  return static_cast<double>(steal) / static_cast<double>(ticks);
}

}  // namespace dtbench
