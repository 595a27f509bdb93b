#pragma once
// Internal to rpc/: builds TensorPipe contexts and listen URLs for a
// TransportOptions. Only rpc/*.cc include this (and so TensorPipe).
#include <memory>
#include <string>
#include <vector>

#include <tensorpipe/tensorpipe.h>

#include "rpc/transport.h"

namespace dtbench::rpc::detail {

// A context with the transports and channels `opts` asks for, basic always
// registered as the lowest-priority channel.
std::shared_ptr<tensorpipe::Context> make_context(const TransportOptions& opts,
                                                  const std::string& name);

// URLs a server listens on for `opts` (port 0: the kernel picks).
std::vector<std::string> listen_urls(const TransportOptions& opts);

// "uv" for "uv://…", "shm" for "shm://…".
std::string scheme_of(const std::string& url);

// One line from a TensorPipe error.
std::string what(const tensorpipe::Error& e);

}  // namespace dtbench::rpc::detail
