#pragma once
// Internal to rpc/: builds TensorPipe contexts and listen URLs for a
// TransportOptions. Only rpc/*.cc include this (and so TensorPipe).
#include <memory>
#include <string>
#include <vector>

#include <tensorpipe/tensorpipe.h>

#include "rpc/node.h"
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

// A message with `metadata` whose parts travel inline (payloads) when they
// total at most kInlineLimit bytes, as tensors over the channel otherwise.
tensorpipe::Message make_message(std::string metadata, const std::vector<Buffer>& parts);
// A request/reply: the encoded header as metadata, then the parts.
tensorpipe::Message make_message(const Header& h, const std::vector<Buffer>& parts);
// Part lengths of an incoming message: payloads, then tensors.
std::vector<std::size_t> lengths_of(const tensorpipe::Descriptor& d);
// Receives the parts of `d` into `into` (one buffer per part, same order).
tensorpipe::Allocation allocation_for(const tensorpipe::Descriptor& d, const std::vector<Buffer>& into);
bool lengths_match(const std::vector<std::size_t>& got, const std::vector<Buffer>& into);
std::string describe_lengths(const std::vector<std::size_t>& v);  // "[1,2]"

// One line from a TensorPipe error.
std::string what(const tensorpipe::Error& e);

}  // namespace dtbench::rpc::detail
