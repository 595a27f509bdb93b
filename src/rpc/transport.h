#pragma once
// Which TensorPipe transport and channel dtbench's RPC uses, and how a
// server's address travels through the rendezvous store. Torch-free and
// TensorPipe-free: the engine itself stays in the .cc files.
//   transport auto: shm between processes of one host, uv (TCP) across hosts
//   channel   auto: cma (cross-memory attach) where permitted; basic always
//                   registered as the fallback
#include <chrono>
#include <string>
#include <vector>

namespace dtbench::rpc {

struct TransportOptions {
  // "auto", "shm" or "uv". Default "auto".
  std::string transport = "auto";
  // "auto", "cma" or "basic". Default "auto".
  std::string channel = "auto";
  // Address the uv (TCP) transport listens on; "" = 127.0.0.1 for a loopback
  // master, else the address of --iface or of this host's name. Default "".
  std::string listen_host;
  // Bound on connecting and on every request. Default 60 s.
  std::chrono::milliseconds timeout{60000};
};

// Throws UsageError for an unknown transport or channel name, or a
// non-positive timeout (rpc/transport_options.cc: no TensorPipe, so the
// LibTorch-free front end can check the flags).
void validate_names(const TransportOptions& opts);

// validate_names, and throws UsageError for a transport or channel that
// cannot run on this host (e.g. --transport shm where shm is not viable).
void validate(const TransportOptions& opts);

// A server's addresses as published in the store: the host it runs on and
// one URL per transport it listens on ("shm://…", "uv://host:port").
struct Endpoint {
  std::string host_id;
  std::vector<std::string> urls;
};
std::string encode_endpoint(const Endpoint& e);
// Throws CommError on malformed text.
Endpoint decode_endpoint(const std::string& text);

// The URL a client on this host uses to reach `remote`: shm on the same host
// (same net::host_identity(), unless --transport uv), uv otherwise. Throws UsageError when the chosen
// transport cannot reach it (--transport shm to another host).
std::string pick_url(const Endpoint& remote, const TransportOptions& opts);

// The address a uv listener should use in a job whose store is at
// `master_addr`: 127.0.0.1 for a loopback master, the address of `iface` when
// given, else the address of this host's name. Throws UsageError when the
// interface has no address.
std::string listen_host_for(const std::string& master_addr, const std::string& iface);

// One TensorPipe transport or channel as `dtbench env` lists it.
struct Component {
  std::string kind;  // "transport" or "channel"
  std::string name;
  bool viable = false;
  std::string note;
};
std::vector<Component> components();

// The channel actually selected for `opts` ("cma" or "basic"), the transport
// names registered, for reports.
std::string describe(const TransportOptions& opts);

}  // namespace dtbench::rpc
