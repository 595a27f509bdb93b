#include "core/error.h"

namespace dtbench {

void check_failed(const char* expr, const char* file, int line, const std::string& msg) {
  throw std::logic_error(std::string("internal error: ") + file + ":" + std::to_string(line) +
                         ": check '" + expr + "' failed" + (msg.empty() ? "" : ": " + msg));
}

}  // namespace dtbench
