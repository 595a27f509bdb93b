#pragma once
// One communicator per group of a layout's mesh, as torchtitan's
// DeviceMesh: every rank's communicator over the whole job, over its
// data-parallel group, over its tensor-parallel group and over its
// pipeline group, all meeting
// through the job's one store ("dtbench/mesh/<dim><group>" prefixes). A
// dimension of degree 1 gets no communicator; one as wide as the job shares
// the job's. Backends that serve sub-groups (gloo, nccl) take any mesh;
// mpi only the whole job (one communicator per dimension at most, the
// world's).
#include <memory>

#include "comm/factory.h"
#include "layout/parallel_dims.h"
#include "launch/world.h"

namespace dtbench::comm {
class Communicator;
}

namespace dtbench::layout {

struct MeshComms {
  ParallelDims dims;
  std::unique_ptr<comm::Communicator> world;
  // Null where the dimension's degree is 1; equal to world.get() where it
  // spans the job.
  comm::Communicator* dp = nullptr;
  comm::Communicator* tp = nullptr;
  comm::Communicator* pp = nullptr;

 private:
  friend MeshComms make_mesh_comms(const launch::World&, const comm::CommOptions&, const ParallelDims&);
  std::unique_ptr<comm::Communicator> dp_own_, tp_own_, pp_own_;
};

// The communicators of `dims` (dims.world() must be the job's size). Throws
// UsageError in one line where the backend cannot make a sub-group.
MeshComms make_mesh_comms(const launch::World& world, const comm::CommOptions& opts, const ParallelDims& dims);

}  // namespace dtbench::layout
