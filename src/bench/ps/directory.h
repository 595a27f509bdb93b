#pragma once
// Parameter-server roles find each other through the job's rendezvous store:
// a server publishes its TensorPipe endpoint under a key; clients wait for it.
// Results travel back to the leader the same way.
#include <chrono>
#include <string>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "rpc/transport.h"

namespace dtbench::bench::ps {

void publish(c10d::Store& store, const std::string& key, const rpc::Endpoint& ep);

// Waits up to `timeout` for `key`. Throws TimeoutError naming the key (the
// server it belongs to never started or died first).
rpc::Endpoint lookup(c10d::Store& store, const std::string& key, std::chrono::milliseconds timeout);

// Small results the roles leave for the leader (JSON text, update logs).
void put_text(c10d::Store& store, const std::string& key, const std::string& text);
// Waits up to `timeout` for `key`; TimeoutError names it and `who` waits.
std::string wait_text(c10d::Store& store, const std::string& key, std::chrono::milliseconds timeout,
                      const std::string& who);

}  // namespace dtbench::bench::ps
