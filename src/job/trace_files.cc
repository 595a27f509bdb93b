#include "job/trace_files.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <zlib.h>

#include "core/error.h"
#include "job/kineto_reader.h"
#include "report/json_io.h"

namespace dtbench::job {
namespace fs = std::filesystem;

std::string read_maybe_gzip(const std::string& path) {
  const std::string raw = report::read_text_file(path);
  if (raw.size() < 2 || static_cast<unsigned char>(raw[0]) != 0x1f || static_cast<unsigned char>(raw[1]) != 0x8b)
    return raw;
  z_stream z{};
  // 16 + MAX_WBITS: a gzip header and trailer; concatenated members are read on.
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw UsageError(fmt::format("{}: cannot start zlib", path));
  std::string out;
  char buf[1 << 16];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  // avail_in is 32 bits: the input is fed in chunks of at most 1 GiB.
  std::size_t left = raw.size();
  auto feed = [&]() {
    const std::size_t n = std::min<std::size_t>(left, std::size_t{1} << 30);
    z.avail_in = static_cast<uInt>(n);
    left -= n;
  };
  feed();
  int rc = Z_OK;
  while (true) {
    if (z.avail_in == 0 && left > 0) feed();
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0 && left == 0) break;
      inflateReset(&z);  // another gzip member follows
      continue;
    }
    if (rc != Z_OK) break;
    if (z.avail_in == 0 && left == 0 && z.avail_out != 0) {
      rc = Z_BUF_ERROR;  // input ended inside the stream
      break;
    }
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END)
    throw UsageError(fmt::format("{}: the gzip stream is {} after {} bytes inflated", path,
                                 rc == Z_BUF_ERROR ? "truncated" : "corrupt", out.size()));
  return out;
}

std::vector<std::string> trace_files(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> in_dir;
      for (const auto& entry : fs::directory_iterator(p, ec))
        if (entry.is_regular_file() && entry.path().filename().string().find(".json") != std::string::npos)
          in_dir.push_back(entry.path().string());
      if (ec) throw UsageError(fmt::format("{}: cannot list the directory: {}", p, ec.message()));
      if (in_dir.empty())
        throw UsageError(fmt::format("{}: no trace in the directory (no file whose name holds '.json')", p));
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (fs::exists(p, ec)) {
      files.push_back(p);
    } else {
      throw UsageError(fmt::format("{}: no such file or directory", p));
    }
  }
  return files;
}

namespace {

// A collective whose dtype only its execution recorded (one Kineto left
// unfinished) takes the dtype of the same collective (group, iteration,
// place in it) on a rank that has it, where the element counts agree.
void fill_dtypes_from_peers(JobTrace& job) {
  using Key = std::tuple<std::string, int, int>;
  std::map<Key, const Collective*> known;
  auto each = [&job](auto&& fn) {
    for (auto& r : job.ranks) {
      std::map<std::pair<std::string, int>, int> index;
      for (auto& c : r.collectives)
        if (c.step >= 0) fn(Key{c.group, c.step, index[{c.group, c.step}]++}, c);
    }
  };
  each([&](const Key& k, Collective& c) {
    if (!c.dtype.empty()) known.emplace(k, &c);
  });
  each([&](const Key& k, Collective& c) {
    if (!c.dtype.empty()) return;
    const auto it = known.find(k);
    if (it == known.end() || it->second->name != c.name || it->second->in_nelems != c.in_nelems) return;
    c.dtype = it->second->dtype;
    if (c.out_nelems < 0) c.out_nelems = it->second->out_nelems;
    const int64_t n = std::max(c.in_nelems, c.out_nelems);
    if (n >= 0) c.bytes = n * dtype_bytes(c.dtype);
  });
}

}  // namespace

JobTrace read_job(const std::vector<std::string>& paths, const ReadOptions& opt) {
  JobTrace job;
  for (const auto& p : paths) job.source += (job.source.empty() ? "" : " ") + p;
  std::map<int, std::string> file_of_rank;
  for (const auto& file : trace_files(paths)) {
    const auto doc = report::parse_json_text(read_maybe_gzip(file), file);
    if (is_execution_trace(doc)) {
      job.skipped.push_back(file + ": an execution trace (Chakra): not read (the Kineto traces are)");
      continue;
    }
    if (doc.is_object() && doc.contains("schema") && doc["schema"].is_string() &&
        doc["schema"].get<std::string>().rfind("dtbench.", 0) == 0) {
      job.skipped.push_back(file + ": a dtbench report (" + doc["schema"].get<std::string>() + "), not a trace");
      continue;
    }
    if (doc.is_array())
      throw UsageError(fmt::format("{}: a bare list of events, as torch's legacy profiler writes without Kineto "
                                   "(Debian's torch 1.13): it records no rank, process group or size; record the "
                                   "job with a torch built with Kineto (PyPI's)", file));
    if (!is_kineto_trace(doc))
      throw UsageError(fmt::format("{}: neither a PyTorch profiler trace (traceEvents) nor an execution trace "
                                   "(schema, nodes)", file));
    RankTrace r = read_kineto(doc, file);
    if (const auto it = file_of_rank.find(r.rank); it != file_of_rank.end())
      throw UsageError(fmt::format("{} and {} are both traces of rank {}", it->second, file, r.rank));
    if (!job.ranks.empty() && r.world_size != job.ranks.front().world_size)
      throw UsageError(fmt::format("{} is a trace of a world of {} ranks, {} of {}", file, r.world_size,
                                   job.ranks.front().file, job.ranks.front().world_size));
    file_of_rank[r.rank] = file;
    job.ranks.push_back(std::move(r));
  }
  if (job.ranks.empty())
    throw UsageError(fmt::format("{}: no PyTorch profiler trace among the files (execution traces alone are "
                                 "not read)", job.source));
  std::sort(job.ranks.begin(), job.ranks.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  fill_dtypes_from_peers(job);
  job.world_size = job.ranks.front().world_size;
  if (static_cast<int>(job.ranks.size()) < job.world_size && !opt.partial) {
    int missing = 0;
    while (file_of_rank.count(missing)) ++missing;
    throw UsageError(fmt::format("{}: rank {} of the world of {} has no trace ({} of {} ranks read); "
                                 "--partial reads the ranks present",
                                 job.source, missing, job.world_size, job.ranks.size(), job.world_size));
  }
  return job;
}

}  // namespace dtbench::job
