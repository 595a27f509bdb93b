#include "rpc/node.h"

#include <fmt/format.h>

#include "core/error.h"
#include "rpc/tp_context.h"

namespace dtbench::rpc {

Node::Node(const TransportOptions& opts, std::string name) : opts_(opts), name_(std::move(name)) {
  validate(opts_);
  ctx_ = detail::make_context(opts_, name_);
}

Node::~Node() { close(); }

void Node::close() {
  if (closed_) return;
  closed_ = true;
  ctx_->close();
  ctx_->join();
}

}  // namespace dtbench::rpc
