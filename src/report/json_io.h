#pragma once
// Reading and writing JSON report files. Writes are atomic: the document goes
// to a temporary file beside the target, is flushed, then renamed over it, so
// a reader never sees a half-written report.
#include <string>

#include <nlohmann/json.hpp>

namespace dtbench::report {

using Json = nlohmann::ordered_json;

// Throws IoError naming the path when it cannot be written.
void write_json_atomic(const std::string& path, const Json& doc);
// The same for any text (HTML, CSV, a rewritten JSON-lines file).
void write_text_atomic(const std::string& path, const std::string& text);

// Checks, before a long run, that a report can later be written at `path`:
// its directory exists and it is not itself a directory. Throws UsageError
// naming the flag `what`.
void require_writable_path(const std::string& path, const std::string& what);

// Appends one line of JSON to a JSON-lines file (created if missing) and
// flushes it to disk.
void append_jsonl(const std::string& path, const Json& line);

// Parses a JSON file. Throws UsageError with a one-line reason for a missing,
// unreadable, empty, non-regular or malformed file.
Json read_json_file(const std::string& path);
// The same for text already read; `name` names it in errors.
Json parse_json_text(const std::string& text, const std::string& name);
// A whole file as bytes. Throws UsageError for a missing, unreadable file or
// a directory.
std::string read_text_file(const std::string& path);
// `text` with non-printable bytes as \xNN, cut after `max_len` characters:
// safe to put in a one-line error message.
std::string printable(const std::string& text, std::size_t max_len);

// j[key] as T; throws UsageError "<where>: missing key 'k'" / "wrong type"
// (the validated reading of report files).
template <typename T>
T json_field(const Json& j, const char* key, const std::string& where);

// j[key] as T, or `fallback` when j is not an object or has no such key (or
// null); UsageError when the key holds another type.
template <typename T>
T json_value_or(const Json& j, const char* key, T fallback, const std::string& where);

// Now, as "2026-11-21T10:00:00Z" (the "created" field of every report).
std::string utc_timestamp();

}  // namespace dtbench::report

#include "report/json_io_inl.h"
