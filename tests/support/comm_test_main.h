#pragma once
// main() of the gtest programs that run inside every rank of a job started by
// `dtbench launch` or mpirun: `PROGRAM --backend gloo|mpi [gtest flags]`.
// Builds the communicator from the environment into `comm`, runs the tests,
// then barriers so no rank leaves while others still talk to it.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "comm/communicator.h"
#include "comm/factory.h"
#include "launch/world.h"

namespace dtbench::testing {

inline int run_comm_tests(int argc, char** argv, const char* program,
                          std::unique_ptr<comm::Communicator>& comm) {
  ::testing::InitGoogleTest(&argc, argv);
  comm::CommOptions opts;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--backend") opts.backend = argv[i + 1];
  opts.timeout = std::chrono::seconds(60);
  try {
    comm = comm::make_communicator(launch::world_from_env(launch::process_env()), opts);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
  const int rc = RUN_ALL_TESTS();
  comm->barrier();
  comm.reset();
  return rc;
}

}  // namespace dtbench::testing
