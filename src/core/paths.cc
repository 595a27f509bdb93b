#include "core/paths.h"

namespace dtbench {

std::string insert_before_extension(const std::string& path, const std::string& tag,
                                    const std::string& default_ext) {
  const auto slash = path.rfind('/');
  const auto dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == slash + 1)
    return path + "." + tag + default_ext;
  return path.substr(0, dot) + "." + tag + path.substr(dot);
}

}  // namespace dtbench
