#include "comm/mpi/mpi_rendezvous.h"

#include <mpi.h>

#include <array>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "comm/mpi/mpi_abort.h"
#include "core/error.h"
#include "core/hang_watchdog.h"
#include "core/net_route.h"

namespace dtbench::comm {
namespace {

constexpr int kIdBytes = 256, kAddrBytes = 64;

struct Record {
  std::array<char, kIdBytes> host{};
  std::array<char, kAddrBytes> addr{};
};

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw CommError(fmt::format("mpirun rendezvous: MPI_{} failed: {}", what, std::string(text, len)));
}

template <std::size_t N>
void put(std::array<char, N>& dst, const std::string& s) {
  std::strncpy(dst.data(), s.c_str(), N - 1);
}

}  // namespace

launch::World publish_master_over_mpi(launch::World world, const std::string& iface,
                                      std::chrono::milliseconds timeout) {
  // Every MPI call here is bounded: a rank stopped or gone before it joins
  // would otherwise hang the job for ever.
  HangWatchdog watchdog(timeout, [rank = world.rank, timeout](const std::string& what, std::int64_t,
                                                              double seconds) {
    mpi_abort_hung(fmt::format(
        "dtbench: error: mpirun rendezvous: rank {}: MPI_{} made no progress for {:.1f} s (--timeout {} ms): "
        "a peer rank is stopped, hung or never started; aborting the job (MPI_Abort)\n",
        rank, what, seconds, timeout.count()));
  });
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    const auto w = watchdog.watch("Init_thread", 0);
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "Init_thread");
  }
  int rank = 0, size = 1;
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size), "Comm_size");
  Record mine;
  put(mine.host, net::host_identity());
  const auto addrs = net::local_ipv4_addresses();
  put(mine.addr, !iface.empty() ? net::interface_address(iface) : addrs.empty() ? "" : addrs.front());
  std::vector<Record> all(static_cast<std::size_t>(size));
  {
    const auto w = watchdog.watch("Allgather", sizeof(Record));
    check_mpi(MPI_Allgather(&mine, sizeof(Record), MPI_BYTE, all.data(), sizeof(Record), MPI_BYTE,
                            MPI_COMM_WORLD),
              "Allgather");
  }
  // Rank 0 decides: [address, port]; an error text instead starts with '!'.
  std::array<char, kAddrBytes + 16> decision{};
  if (rank == 0) {
    std::string addr = "127.0.0.1", error;
    for (int r = 1; r < size; ++r) {
      if (std::strcmp(all[r].host.data(), all[0].host.data()) == 0) continue;
      if (!iface.empty()) {
        addr = mine.addr.data();
      } else if (all[r].addr[0] == '\0') {
        error = fmt::format("rank {} (on another host) has no IPv4 address besides loopback", r);
      } else {
        try {
          addr = net::route_to(all[r].addr.data()).local_addr;
        } catch (const std::exception& e) {
          error = e.what();
        }
      }
      break;
    }
    const int port = world.master_port_given ? world.master_port : net::free_tcp_port();
    const std::string text = error.empty() ? fmt::format("{} {}", addr, port) : "!" + error;
    std::strncpy(decision.data(), text.c_str(), decision.size() - 1);
  }
  {
    const auto w = watchdog.watch("Bcast", static_cast<std::int64_t>(decision.size()));
    check_mpi(MPI_Bcast(decision.data(), static_cast<int>(decision.size()), MPI_CHAR, 0, MPI_COMM_WORLD),
              "Bcast");
  }
  if (!initialized) {
    const auto w = watchdog.watch("Finalize", 0);
    MPI_Finalize();
  }
  const std::string text = decision.data();
  if (!text.empty() && text[0] == '!')
    throw CommError("mpirun rendezvous: rank 0 found no address the other hosts can reach: " +
                    text.substr(1) + "; set MASTER_ADDR (mpirun -x MASTER_ADDR=host) or --iface");
  const auto space = text.find(' ');
  world.master_addr = text.substr(0, space);
  world.master_port = std::stoi(text.substr(space + 1));
  world.master_given = true;
  return world;
}

}  // namespace dtbench::comm
