#pragma once
// File names derived from a user's path. Pure; torch-free.
#include <string>

namespace dtbench {

// `path` with ".tag" before its extension (trace.json + "1N-2R" ->
// trace.1N-2R.json); a path without an extension gets ".tag" and then
// `default_ext` (trace + "1N-2R", ".json" -> trace.1N-2R.json). A dot in a
// folder's name or a file's leading dot is not an extension.
std::string insert_before_extension(const std::string& path, const std::string& tag,
                                    const std::string& default_ext = "");

}  // namespace dtbench
