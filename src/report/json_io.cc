#include "report/json_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::report {
namespace {

void write_all(int fd, const std::string& data, const std::string& path) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
    }
    done += static_cast<std::size_t>(n);
  }
}

// The process's umask without changing it (umask(2) can only set it, and
// setting it and back races with other threads creating files).
mode_t current_umask() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::stoul(line.substr(6), nullptr, 8));
  return 022;
}

}  // namespace

void write_json_atomic(const std::string& path, const Json& doc) {
  write_text_atomic(path, doc.dump(2) + "\n");
}

void write_text_atomic(const std::string& path, const std::string& text) {
  if (path.empty()) throw UsageError("empty output path");
  // A fresh name (mkstemp: O_CREAT | O_EXCL, never follows a planted
  // symlink), then renamed over the target.
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) throw IoError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  ::fchmod(fd, 0644 & ~current_umask());  // a report, readable as any file the user writes (mkstemp: 0600)
  try {
    write_all(fd, text, path);
    if (::fsync(fd) != 0) throw IoError(fmt::format("cannot sync '{}': {}", path, std::strerror(errno)));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw IoError(fmt::format("cannot write '{}': {}", path, why));
  }
}

void require_writable_path(const std::string& path, const std::string& what) {
  if (path.empty()) throw UsageError(fmt::format("{}: empty path", what));
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw UsageError(fmt::format("{}: '{}' is a directory", what, path));
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UsageError(fmt::format("{}: directory '{}' does not exist", what, dir));
  if (::access(dir.c_str(), W_OK) != 0)
    throw UsageError(fmt::format("{}: directory '{}' is not writable", what, dir));
}

void append_jsonl(const std::string& path, const Json& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError(fmt::format("cannot append to '{}': {}", path, std::strerror(errno)));
  try {
    write_all(fd, line.dump() + "\n", path);
    ::fsync(fd);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

std::string read_text_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw UsageError(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) throw UsageError(fmt::format("cannot read '{}': it is a directory", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  std::stringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throw UsageError(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  return buf.str();
}

std::string printable(const std::string& text, std::size_t max_len) {
  std::string out;
  for (unsigned char c : text) {
    if (out.size() >= max_len) {
      out += "...";
      break;
    }
    if (c >= 0x20 && c < 0x7f) out += static_cast<char>(c);
    else out += fmt::format("\\x{:02x}", c);
  }
  return out;
}

Json parse_json_text(const std::string& text, const std::string& name) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw UsageError(fmt::format("'{}' is empty", name));
  // Reports are a few levels deep; far deeper input is refused before any
  // recursive code (dump, comparisons, flattening) could exhaust the stack.
  static constexpr int kMaxDepth = 64;
  const Json::parser_callback_t depth_guard = [&name](int depth, Json::parse_event_t, Json&) {
    if (depth > kMaxDepth)
      throw UsageError(fmt::format("'{}' is nested deeper than {} levels: not a dtbench report",
                                   name, kMaxDepth));
    return true;
  };
  try {
    return Json::parse(text, depth_guard);
  } catch (const Json::exception& e) {  // parse errors, number overflow (1e400)
    std::string what = e.what();
    const auto pos = what.find("] ");
    if (pos != std::string::npos) what = what.substr(pos + 2);
    throw UsageError(fmt::format("'{}' is not valid JSON: {}", name, printable(what, 200)));
  }
}

Json read_json_file(const std::string& path) { return parse_json_text(read_text_file(path), path); }

std::string utc_timestamp() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace dtbench::report
