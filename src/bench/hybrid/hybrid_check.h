#pragma once
// `dtbench hybrid --check`: a server's event log replayed on PyTorch's own
// EmbeddingBag (forward with torch::embedding_bag, the gradient scattered
// with index_add_, SGD with add_), in the order the server applied it. Every
// lookup a trainer received is compared (its LookupSum) with the replayed
// table's bags at that moment, and the server's final table with the
// replay's. A server that returns wrong, stale or misplaced rows, drops or
// repeats an update, or a reply garbled on the way, fails.
#include <cstdint>
#include <string>
#include <vector>

#include "bench/hybrid/hybrid_config.h"

namespace dtbench::bench::hybrid {

struct ServerReplay {
  std::int64_t lookups = 0, backwards = 0, steps = 0;
  double max_table_diff = 0;  // |server's final table - replay's|
  double tolerance = 0;       // the largest difference allowed
};

// sums[t][batch * servers + server]: trainer t's fingerprint of the lookup
// it received. Every trainer must have made `batches_per_trainer` lookups,
// backwards and steps on this server. Throws VerificationError on the first
// difference, naming the server, trainer and batch.
ServerReplay replay_server(const HybridOptions& o, int server, const std::string& log,
                           const std::vector<std::vector<LookupSum>>& sums, std::int64_t batches_per_trainer,
                           const std::vector<float>& final_table);

}  // namespace dtbench::bench::hybrid
