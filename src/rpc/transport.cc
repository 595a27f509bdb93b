#include "rpc/transport.h"

#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "core/error.h"
#include "core/net_route.h"
#include "launch/world.h"
#include "rpc/tp_context.h"

namespace dtbench::rpc {
namespace {

bool shm_viable() {
  static const bool viable = tensorpipe::transport::shm::create()->isViable();
  return viable;
}

bool cma_viable() {
  static const bool viable = tensorpipe::channel::cma::create()->isViable();
  return viable;
}

std::string uv_host(const TransportOptions& o) {
  if (!o.listen_host.empty()) return o.listen_host;
  return "127.0.0.1";
}

}  // namespace

void validate(const TransportOptions& o) {
  validate_names(o);
  if (o.transport == "shm" && !shm_viable())
    throw UsageError("--transport shm: TensorPipe's shm transport is not usable on this host");
  if (o.channel == "cma" && !cma_viable())
    throw UsageError(
        "--channel cma: cross-memory attach is not permitted here (ptrace scope or "
        "container policy); use --channel basic");
}

std::string encode_endpoint(const Endpoint& e) {
  std::string out = e.host_id;
  for (const auto& u : e.urls) out += "\n" + u;
  return out;
}

Endpoint decode_endpoint(const std::string& text) {
  Endpoint e;
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, e.host_id) || e.host_id.empty())
    throw CommError("rpc: malformed server address in the store (no host id)");
  while (std::getline(in, line))
    if (!line.empty()) e.urls.push_back(line);
  if (e.urls.empty()) throw CommError("rpc: malformed server address in the store (no URL)");
  return e;
}

std::string pick_url(const Endpoint& remote, const TransportOptions& o) {
  const bool same_host = remote.host_id == net::host_identity();
  std::string want;
  if (o.transport == "shm" || (o.transport == "auto" && same_host && shm_viable())) want = "shm";
  else want = "uv";
  if (want == "shm" && !same_host)
    throw UsageError(fmt::format(
        "--transport shm cannot reach a server on another host ({}); use --transport uv or auto",
        remote.host_id));
  for (const auto& u : remote.urls)
    if (detail::scheme_of(u) == want) return u;
  throw CommError(fmt::format("rpc: the server on {} does not listen on the {} transport "
                              "(its --transport differs from this process's?)",
                              remote.host_id, want));
}

std::string listen_host_for(const std::string& master_addr, const std::string& iface) {
  if (iface.empty() && launch::is_loopback(master_addr)) return "127.0.0.1";
  tensorpipe::Error err;
  std::string addr;
  if (!iface.empty()) {
    std::tie(err, addr) = tensorpipe::transport::uv::lookupAddrForIface(iface);
    if (err)
      throw UsageError(fmt::format("--iface {}: no IPv4/IPv6 address for TensorPipe: {}", iface,
                                   detail::what(err)));
  } else {
    addr = net::route_to(master_addr).local_addr;  // the interface that routes to the master
  }
  return addr;
}

std::vector<Component> components() {
  std::vector<Component> out;
  out.push_back({"transport", "uv", tensorpipe::transport::uv::create()->isViable(),
                 "TCP through libuv; works across hosts"});
  out.push_back({"transport", "shm", shm_viable(), "shared-memory rings; one host only"});
  out.push_back({"channel", "cma", cma_viable(),
                 "cross-memory attach (process_vm_readv); one host, needs ptrace permission"});
  out.push_back({"channel", "basic", true, "payload bytes through the transport; always registered"});
  return out;
}

std::string describe(const TransportOptions& o) {
  const std::string ch =
      o.channel == "basic" || (o.channel == "auto" && !cma_viable()) ? "basic" : "cma+basic";
  const std::string tr = o.transport == "auto" ? (shm_viable() ? "shm+uv" : "uv") : o.transport;
  return fmt::format("transport {}, channel {}", tr, ch);
}

namespace detail {

std::shared_ptr<tensorpipe::Context> make_context(const TransportOptions& o,
                                                  const std::string& name) {
  auto ctx = std::make_shared<tensorpipe::Context>(tensorpipe::ContextOptions().name(name));
  if (o.transport != "shm") ctx->registerTransport(0, "uv", tensorpipe::transport::uv::create());
  if (o.transport != "uv" && shm_viable())
    ctx->registerTransport(10, "shm", tensorpipe::transport::shm::create());
  ctx->registerChannel(0, "basic", tensorpipe::channel::basic::create());
  if (o.channel != "basic" && cma_viable())
    ctx->registerChannel(10, "cma", tensorpipe::channel::cma::create());
  return ctx;
}

std::vector<std::string> listen_urls(const TransportOptions& o) {
  std::vector<std::string> urls;
  if (o.transport != "uv" && shm_viable()) urls.push_back("shm://");
  if (o.transport != "shm") {
    const auto host = uv_host(o);
    urls.push_back(host.find(':') != std::string::npos ? fmt::format("uv://[{}]:0", host)
                                                       : fmt::format("uv://{}:0", host));
  }
  return urls;
}

std::string scheme_of(const std::string& url) {
  const auto p = url.find("://");
  return p == std::string::npos ? "" : url.substr(0, p);
}

std::string what(const tensorpipe::Error& e) {
  std::string s = e.what();
  const auto p = s.find(" (this error originated");
  if (p != std::string::npos) s.resize(p);
  for (auto& c : s)
    if (c == '\n') c = ' ';
  return s;
}

}  // namespace detail
}  // namespace dtbench::rpc
