#include "comm/error_text.h"

#include <c10/util/Exception.h>

#include "core/error.h"

namespace dtbench::comm {

std::string one_line(const std::exception& e) {
  std::string msg;
  if (const auto* ce = dynamic_cast<const c10::Error*>(&e)) {
    msg = ce->what_without_backtrace();
  } else {
    msg = e.what();
  }
  // Keep the first non-empty line; drop gloo's "[enforce fail at file:line]".
  std::string line;
  for (std::size_t start = 0; start < msg.size();) {
    auto end = msg.find('\n', start);
    if (end == std::string::npos) end = msg.size();
    line = msg.substr(start, end - start);
    if (line.find_first_not_of(" \t") != std::string::npos) break;
    start = end + 1;
  }
  if (line.rfind("[enforce fail at", 0) == 0 || line.rfind("[/", 0) == 0 || line.rfind("[./", 0) == 0) {
    const auto close = line.find("] ");
    if (close != std::string::npos) line = line.substr(close + 2);
  }
  return line;
}

namespace {
bool text_timed_out(const std::string& text) {
  return text.find("imed out") != std::string::npos || text.find("imeout") != std::string::npos;
}
bool text_peer_gone(const std::string& text) {
  return text.find("closed by peer") != std::string::npos ||
         text.find("reset by peer") != std::string::npos;
}
}  // namespace

bool is_peer_failure(const std::exception& e) {
  if (dynamic_cast<const TimeoutError*>(&e) || dynamic_cast<const CommError*>(&e)) return true;
  const std::string text = one_line(e);
  return text_timed_out(text) || text_peer_gone(text);
}

std::exception_ptr translate(std::exception_ptr error, const std::string& context) {
  if (!error) return nullptr;
  try {
    std::rethrow_exception(error);
  } catch (const CommError&) {
    return std::current_exception();
  } catch (const UnsupportedError&) {
    return std::current_exception();
  } catch (const UsageError&) {
    return std::current_exception();
  } catch (const std::exception& e) {
    const std::string text = one_line(e);
    if (text_timed_out(text))
      return std::make_exception_ptr(TimeoutError(
          context + ": " + text + " (no answer within --timeout: a peer hung, died or is unreachable)"));
    if (text_peer_gone(text))
      return std::make_exception_ptr(
          CommError(context + ": " + text + " (the process at that address died or left the job)"));
    return std::make_exception_ptr(CommError(context + ": " + text));
  }
}

}  // namespace dtbench::comm
