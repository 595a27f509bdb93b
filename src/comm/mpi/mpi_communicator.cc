#include "comm/mpi/mpi_communicator.h"

#include <mpi.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <fmt/format.h>

#include "core/error.h"
#include "comm/mpi/mpi_abort.h"
#include "core/hang_watchdog.h"
#include "core/units.h"

namespace dtbench::comm {
namespace {

// Elementwise reduction for 16-bit floats, which MPI has no type for: the
// values travel as 2-byte opaque elements and are combined in float.
template <typename T, ReduceOp kOp>
void reduce16(void* in, void* inout, int* len, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = static_cast<float>(a[i]);
    const float y = static_cast<float>(b[i]);
    float r = 0;
    if constexpr (kOp == ReduceOp::kSum) r = x + y;
    if constexpr (kOp == ReduceOp::kProd) r = x * y;
    if constexpr (kOp == ReduceOp::kMin) r = x < y ? x : y;
    if constexpr (kOp == ReduceOp::kMax) r = x > y ? x : y;
    b[i] = static_cast<T>(r);
  }
}

template <typename T>
void create_ops(MPI_Op ops[4]) {
  MPI_Op_create(&reduce16<T, ReduceOp::kSum>, 1, &ops[0]);
  MPI_Op_create(&reduce16<T, ReduceOp::kProd>, 1, &ops[1]);
  MPI_Op_create(&reduce16<T, ReduceOp::kMin>, 1, &ops[2]);
  MPI_Op_create(&reduce16<T, ReduceOp::kMax>, 1, &ops[3]);
}

int op_index(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return 0;
    case ReduceOp::kProd:
      return 1;
    case ReduceOp::kMin:
      return 2;
    case ReduceOp::kMax:
      return 3;
    case ReduceOp::kAvg:
      break;
  }
  throw UnsupportedError("mpi: MPI has no avg reduction (use sum)");
}

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw CommError(fmt::format("mpi {}: {}", what, std::string(text, static_cast<std::size_t>(len))));
}

// MPI's blocking calls have no timeout: past --timeout without the call
// returning (a peer stopped, hung or unreachable), one line on stderr naming
// this rank and the call, then MPI_Abort ends the whole job.
[[noreturn]] void abort_hung(int rank, std::chrono::milliseconds timeout, const std::string& what,
                             std::int64_t bytes, double seconds) {
  const std::string call = bytes > 0 ? fmt::format("{} of {}", what, format_bytes(static_cast<std::uint64_t>(bytes))) : what;
  const std::string line = fmt::format(
      "dtbench: error: mpi: rank {}: {} made no progress for {:.1f} s (--timeout {} ms): a "
      "peer rank is stopped, hung or unreachable; aborting the job (MPI_Abort)\n",
      rank, call, seconds, timeout.count());
  mpi_abort_hung(line);
}

class MpiCommunicator;

// A posted MPI request (a send or a receive): done when MPI_Test says so;
// wait() is MPI_Wait under the communicator's hang watchdog.
class RequestWork : public Work {
 public:
  RequestWork(MPI_Request request, at::Tensor held, MpiCommunicator& comm, const char* what)
      : request_(request), held_(std::move(held)), comm_(comm), what_(what) {}
  void wait(std::chrono::milliseconds) override;
  bool done() override {
    int flag = 0;
    if (request_ != MPI_REQUEST_NULL) check(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE), what_);
    return request_ == MPI_REQUEST_NULL;
  }
  std::exception_ptr error() override { return nullptr; }

 private:
  MPI_Request request_;
  at::Tensor held_;
  MpiCommunicator& comm_;
  const char* what_;
};

class MpiCommunicator : public Communicator {
  friend class RequestWork;

 public:
  MpiCommunicator(const launch::World& world, const CommOptions& opts) : timeout_(opts.timeout) {
    if (world.world_size > 1 && world.source != "openmpi" && world.source != "pmi" &&
        world.source != "slurm") {
      throw UsageError(
          "mpi: the mpi backend needs its ranks started by mpirun or srun (use --nproc N, which "
          "runs mpirun, or mpirun -np N dtbench ...)");
    }
    // Every blocking MPI call is bounded, MPI_Init and MPI_Finalize too.
    watchdog_ = std::make_unique<HangWatchdog>(
        timeout_, [rank = world.rank, timeout = timeout_](const std::string& what, std::int64_t bytes,
                                                          double seconds) {
          abort_hung(rank, timeout, what, bytes, seconds);
        });
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      // --iface for MPI traffic: OpenMPI's TCP transport reads this when
      // MPI_Init opens it; an explicit setting from mpirun -x / --mca wins.
      if (!opts.iface.empty()) setenv("OMPI_MCA_btl_tcp_if_include", opts.iface.c_str(), 0);
      int provided = 0;
      const auto w = watchdog_->watch("MPI_Init_thread", 0);
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "init");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    if (rank_ != world.rank || size_ != world.world_size) {
      throw UsageError(fmt::format("mpi: MPI sees rank {} of {}, the environment says {} of {}",
                                   rank_, size_, world.rank, world.world_size));
    }
    MPI_Type_contiguous(2, MPI_BYTE, &type16_);
    MPI_Type_commit(&type16_);
    create_ops<c10::Half>(half_ops_);
    create_ops<c10::BFloat16>(bf16_ops_);
  }

  ~MpiCommunicator() override {
    for (auto& op : half_ops_) MPI_Op_free(&op);
    for (auto& op : bf16_ops_) MPI_Op_free(&op);
    MPI_Type_free(&type16_);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
      const auto w = watchdog_->watch("MPI_Finalize", 0);
      MPI_Finalize();
    }
    watchdog_.reset();
  }

  std::string backend() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::chrono::milliseconds timeout() const override { return timeout_; }

  std::string unsupported_reason(Collective c, DType dtype, ReduceOp op) const override {
    if (c == Collective::kBarrier) return "";  // no data: every dtype and op
    if (is_reduction(c) && op == ReduceOp::kAvg) return "mpi: MPI has no avg reduction (use sum)";
    if (is_float8(dtype)) return fmt::format("mpi: MPI has no {} (no float8 type; NCCL has them: --backend nccl)", to_string(dtype));
    if (c == Collective::kSendrecv && size_ < 2) return "mpi: sendrecv needs at least 2 ranks";
    if (c == Collective::kPingpong && size_ != 2) return pingpong_ranks_reason("mpi", size_);
    return "";
  }

  WorkPtr allreduce(const at::Tensor& in, at::Tensor& out, ReduceOp op) override {
    const void* send = in.is_same(out) ? MPI_IN_PLACE : in.data_ptr();
    const auto watched = watch("allreduce", out);
    check(MPI_Allreduce(send, out.data_ptr(), count(out), type(out), mpi_op(out, op),
                        MPI_COMM_WORLD),
          "allreduce");
    return done();
  }

  WorkPtr broadcast(const at::Tensor& in, at::Tensor& out, int root) override {
    if (rank_ == root && !in.is_same(out)) out.copy_(in);
    const auto watched = watch("broadcast", out);
    check(MPI_Bcast(out.data_ptr(), count(out), type(out), root, MPI_COMM_WORLD), "broadcast");
    return done();
  }

  WorkPtr reduce(const at::Tensor& in, at::Tensor& out, int root, ReduceOp op) override {
    const bool in_place = in.is_same(out);
    const void* send = (in_place && rank_ == root) ? MPI_IN_PLACE : in.data_ptr();
    const auto watched = watch("reduce", in);
    check(MPI_Reduce(send, out.data_ptr(), count(in), type(in), mpi_op(in, op), root,
                     MPI_COMM_WORLD),
          "reduce");
    return done();
  }

  WorkPtr allgather(const at::Tensor& in, at::Tensor& out) override {
    const auto n = in.numel();
    const bool in_place = n > 0 && in.data_ptr() == static_cast<char*>(out.data_ptr()) +
                                                        rank_ * n * static_cast<int64_t>(in.element_size());
    const void* send = in_place ? MPI_IN_PLACE : in.data_ptr();
    const auto watched = watch("allgather", out);
    check(MPI_Allgather(send, count(in), type(in), out.data_ptr(), count(in), type(in),
                        MPI_COMM_WORLD),
          "allgather");
    return done();
  }

  WorkPtr gather(const at::Tensor& in, at::Tensor& out, int root) override {
    const auto watched = watch("gather", in);
    check(MPI_Gather(in.data_ptr(), count(in), type(in), rank_ == root ? out.data_ptr() : nullptr, count(in),
                     type(in), root, MPI_COMM_WORLD),
          "gather");
    return done();
  }

  WorkPtr scatter(const at::Tensor& in, at::Tensor& out, int root) override {
    const auto watched = watch("scatter", out);
    check(MPI_Scatter(rank_ == root ? in.data_ptr() : nullptr, count(out), type(out), out.data_ptr(), count(out),
                      type(out), root, MPI_COMM_WORLD),
          "scatter");
    return done();
  }

  WorkPtr reduce_scatter(const at::Tensor& in, at::Tensor& out, ReduceOp op) override {
    const auto watched = watch("reduce_scatter", in);
    check(MPI_Reduce_scatter_block(in.data_ptr(), out.data_ptr(), count(out), type(out),
                                   mpi_op(out, op), MPI_COMM_WORLD),
          "reduce_scatter");
    return done();
  }

  WorkPtr alltoall(const at::Tensor& in, at::Tensor& out) override {
    const int chunk = count(in) / size_;
    const auto watched = watch("alltoall", in);
    check(MPI_Alltoall(in.data_ptr(), chunk, type(in), out.data_ptr(), chunk, type(out),
                       MPI_COMM_WORLD),
          "alltoall");
    return done();
  }

  WorkPtr alltoallv(const at::Tensor& in, at::Tensor& out, const std::vector<std::int64_t>& in_splits,
                    const std::vector<std::int64_t>& out_splits) override {
    std::vector<int> sc, sd, rc, rd;
    int s = 0, r = 0;
    (void)count(in);  // the 2^31-element bound every MPI call here has, for both buffers
    (void)count(out);
    for (std::size_t j = 0; j < in_splits.size(); ++j) {
      sc.push_back(static_cast<int>(in_splits[j]));
      sd.push_back(s);
      s += sc.back();
      rc.push_back(static_cast<int>(out_splits[j]));
      rd.push_back(r);
      r += rc.back();
    }
    const auto watched = watch("alltoallv", in);
    check(MPI_Alltoallv(in.data_ptr(), sc.data(), sd.data(), type(in), out.data_ptr(), rc.data(), rd.data(), type(out),
                        MPI_COMM_WORLD),
          "alltoallv");
    return done();
  }

  WorkPtr allgatherv(const at::Tensor& in, at::Tensor& out, const std::vector<std::int64_t>& counts) override {
    std::vector<int> rc, rd;
    int at = 0;
    (void)count(out);  // the 2^31-element bound, for the gathered buffer
    for (const auto c : counts) {
      rc.push_back(static_cast<int>(c));
      rd.push_back(at);
      at += rc.back();
    }
    const auto watched = watch("allgatherv", out);
    check(MPI_Allgatherv(in.data_ptr(), count(in), type(in), out.data_ptr(), rc.data(), rd.data(), type(out),
                         MPI_COMM_WORLD),
          "allgatherv");
    return done();
  }

  WorkPtr reduce_scatter_v(const at::Tensor& in, at::Tensor& out, const std::vector<std::int64_t>& counts,
                           ReduceOp op) override {
    std::vector<int> rc;
    (void)count(in);
    for (const auto c : counts) rc.push_back(static_cast<int>(c));
    const auto watched = watch("reduce_scatter_v", in);
    check(MPI_Reduce_scatter(in.data_ptr(), out.data_ptr(), rc.data(), type(in), mpi_op(in, op), MPI_COMM_WORLD),
          "reduce_scatter_v");
    return done();
  }

  // Posted, not waited for (MPI_Isend, MPI_Irecv), as c10d's send and recv:
  // a pipeline posts its sends and its next receive before it computes,
  // which blocking calls (a send of more than MPI's eager limit, any
  // receive) would deadlock against. The work holds the tensor until it
  // completes; its wait is bounded by --timeout like every blocking call.
  WorkPtr send(const at::Tensor& t, int dst, int tag) override {
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Isend(t.data_ptr(), count(t), type(t), dst, tag, MPI_COMM_WORLD, &request), "send");
    return std::make_unique<RequestWork>(request, t, *this, "send");
  }

  WorkPtr recv(at::Tensor& t, int src, int tag) override {
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Irecv(t.data_ptr(), count(t), type(t), src, tag, MPI_COMM_WORLD, &request), "recv");
    return std::make_unique<RequestWork>(request, t, *this, "recv");
  }

  WorkPtr sendrecv(const at::Tensor& in, at::Tensor& out, int dst, int src) override {
    const auto watched = watch("sendrecv", in);
    check(MPI_Sendrecv(in.data_ptr(), count(in), type(in), dst, 0, out.data_ptr(), count(out),
                       type(out), src, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          "sendrecv");
    return done();
  }

  void barrier() override {
    const auto watched = watchdog_->watch("barrier", 0);
    check(MPI_Barrier(MPI_COMM_WORLD), "barrier");
  }

 private:
  static WorkPtr done() { return std::make_unique<CompletedWork>(); }

  HangWatchdog::Scope watch(const char* what, const at::Tensor& t) {
    return watchdog_->watch(what, static_cast<std::int64_t>(t.numel() * t.element_size()));
  }

  static int count(const at::Tensor& t) {
    if (t.numel() > std::numeric_limits<int>::max())
      throw UnsupportedError("mpi: tensors over 2^31-1 elements need MPI 4 large counts");
    return static_cast<int>(t.numel());
  }

  MPI_Datatype type(const at::Tensor& t) const {
    switch (t.scalar_type()) {
      case at::kFloat:
        return MPI_FLOAT;
      case at::kDouble:
        return MPI_DOUBLE;
      case at::kInt:
        return MPI_INT32_T;
      case at::kLong:
        return MPI_INT64_T;
      case at::kChar:
        return MPI_INT8_T;
      case at::kByte:
        return MPI_UINT8_T;
      case at::kBool:
        return MPI_C_BOOL;
      case at::kHalf:
      case at::kBFloat16:
        return type16_;
      default:
        throw UnsupportedError(fmt::format("mpi: dtype {} is not supported",
                                           std::string(c10::toString(t.scalar_type()))));
    }
  }

  MPI_Op mpi_op(const at::Tensor& t, ReduceOp op) const {
    const int i = op_index(op);
    if (t.scalar_type() == at::kHalf) return half_ops_[i];
    if (t.scalar_type() == at::kBFloat16) return bf16_ops_[i];
    // MPI reduces C bools by logical ops only: sum and max are or, prod and
    // min and (as c10d's bool reductions).
    static const MPI_Op kLogical[] = {MPI_LOR, MPI_LAND, MPI_LAND, MPI_LOR};
    if (t.scalar_type() == at::kBool) return kLogical[i];
    static const MPI_Op kBuiltin[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
    return kBuiltin[i];
  }

  int rank_ = 0;
  int size_ = 1;
  std::chrono::milliseconds timeout_;
  MPI_Datatype type16_{};
  MPI_Op half_ops_[4]{};
  MPI_Op bf16_ops_[4]{};
  std::unique_ptr<HangWatchdog> watchdog_;
};

void RequestWork::wait(std::chrono::milliseconds) {
  if (request_ == MPI_REQUEST_NULL) return;
  const auto watched = comm_.watch(what_, held_);
  check(MPI_Wait(&request_, MPI_STATUS_IGNORE), what_);
}

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(const launch::World& world,
                                                    const CommOptions& opts) {
  return std::make_unique<MpiCommunicator>(world, opts);
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, static_cast<std::size_t>(len));
  const auto nl = s.find_first_of("\n,");
  return nl == std::string::npos ? s : s.substr(0, nl);
}

}  // namespace dtbench::comm
