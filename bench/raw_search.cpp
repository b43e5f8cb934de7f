// Raw C++ libzim loop: the performance ceiling the Python bindings are measured against.
//
// Built by bench/run.py:
//   g++ -O2 -std=c++17 raw_search.cpp -o raw_search $(pkg-config --cflags --libs libzim) -pthread
//
// Usage:
//   raw_search --archive KEY=PATH [...] --inputs DIR --workload W --threads N
//              [--hits 16] [--duration S | --passes N]
//   raw_search --list-entries PATH        (path \t title \t mimetype of every non-redirect entry)
//
// W is one of: paths | results | snippets (search), lookups | content (reader).
// DIR holds <KEY>.queries.txt, <KEY>.lookups.tsv (path \t title) and <KEY>.content.txt,
// written by run.py; every implementation reads the same files.
//
// Every thread owns its own zim::Archive + zim::Searcher per archive: libzim 8.1.1
// crashes when threads share one zim::Searcher. Each thread first does one full,
// concurrent verification pass over the op list (its digest must equal the other
// threads' and the other implementations'), then all threads run the timed window.
// Output: one JSON object on stdout.

#include <zim/archive.h>
#include <zim/entry.h>
#include <zim/item.h>
#include <zim/search.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

// ---- SHA-256 (FIPS 180-4), so the digest needs nothing beyond libzim ----
class Sha256 {
 public:
  Sha256() { reset(); }
  void reset() {
    static const uint32_t init[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    std::memcpy(h_, init, sizeof h_);
    len_ = 0;
    buf_len_ = 0;
  }
  void update(const void* data, size_t n) {
    auto p = static_cast<const uint8_t*>(data);
    len_ += n;
    while (n > 0) {
      size_t take = std::min(n, sizeof buf_ - buf_len_);
      std::memcpy(buf_ + buf_len_, p, take);
      buf_len_ += take;
      p += take;
      n -= take;
      if (buf_len_ == 64) {
        block(buf_);
        buf_len_ = 0;
      }
    }
  }
  void update(const std::string& s) { update(s.data(), s.size()); }
  std::string hexdigest() {
    uint64_t bits = len_ * 8;
    uint8_t pad = 0x80;
    update(&pad, 1);
    uint8_t zero = 0;
    while (buf_len_ != 56) update(&zero, 1);
    uint8_t lenbuf[8];
    for (int i = 0; i < 8; ++i) lenbuf[i] = uint8_t(bits >> (56 - 8 * i));
    update(lenbuf, 8);
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (uint32_t v : h_)
      for (int i = 28; i >= 0; i -= 4) out += hex[(v >> i) & 0xf];
    return out;
  }

 private:
  static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
  void block(const uint8_t* b) {
    static const uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = uint32_t(b[4 * i]) << 24 | uint32_t(b[4 * i + 1]) << 16 | uint32_t(b[4 * i + 2]) << 8 | b[4 * i + 3];
    for (int i = 16; i < 64; ++i) {
      uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h_[0], bb = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int i = 0; i < 64; ++i) {
      uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & bb) ^ (a & c) ^ (bb & c));
      h = g; g = f; f = e; e = d + t1; d = c; c = bb; bb = a; a = t1 + t2;
    }
    h_[0] += a; h_[1] += bb; h_[2] += c; h_[3] += d; h_[4] += e; h_[5] += f; h_[6] += g; h_[7] += h;
  }
  uint32_t h_[8];
  uint64_t len_;
  uint8_t buf_[64];
  size_t buf_len_;
};

std::string sha256(const char* data, size_t n) {
  Sha256 s;
  s.update(data, n);
  return s.hexdigest();
}

// ---- inputs ----
struct ArchiveSpec {
  std::string key, path;
};

struct Op {
  size_t archive;    // index into the archive list
  std::string a, b;  // query | (path, title) | path
};

enum class Workload { paths, results, snippets, lookups, content };

std::vector<std::string> read_lines(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot open " + file);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    lines.push_back(line);
  }
  return lines;
}

std::vector<Op> load_ops(const std::vector<ArchiveSpec>& archives, const std::string& dir, Workload w) {
  std::vector<Op> ops;
  for (size_t i = 0; i < archives.size(); ++i) {
    const std::string& key = archives[i].key;
    if (w == Workload::lookups) {
      for (auto& l : read_lines(dir + "/" + key + ".lookups.tsv")) {
        auto tab = l.find('\t');
        ops.push_back({i, l.substr(0, tab), tab == std::string::npos ? "" : l.substr(tab + 1)});
      }
    } else if (w == Workload::content) {
      for (auto& l : read_lines(dir + "/" + key + ".content.txt")) ops.push_back({i, l, ""});
    } else {
      for (auto& l : read_lines(dir + "/" + key + ".queries.txt")) ops.push_back({i, l, ""});
    }
  }
  return ops;
}

// ---- per-thread state and the operation itself ----
struct Worker {
  std::vector<zim::Archive> archives;
  std::vector<std::unique_ptr<zim::Searcher>> searchers;
};

// Runs one op. When `digest` is set, appends the canonical lines all implementations
// produce ("key|query|rank|path|title\n" for searches) and, for results/snippets,
// the score/snippet lines to `extra`.
size_t run_op(Worker& wk, const std::vector<ArchiveSpec>& specs, const Op& op, Workload w, int hits,
              std::string* digest, std::string* extra) {
  size_t n = 0;
  const std::string& key = specs[op.archive].key;
  zim::Archive& ar = wk.archives[op.archive];
  switch (w) {
    case Workload::paths:
    case Workload::results:
    case Workload::snippets: {
      zim::Search search = wk.searchers[op.archive]->search(zim::Query(op.a));
      zim::SearchResultSet rs = search.getResults(0, hits);
      int rank = 0;
      for (auto it = rs.begin(); it != rs.end(); ++it, ++rank) {
        std::string path = it.getPath();
        n += path.size();
        if (w != Workload::paths) {
          std::string title = it.getTitle();
          int score = it.getScore();
          n += title.size() + size_t(score);
          std::string snippet;
          if (w == Workload::snippets) {
            snippet = it.getSnippet();
            n += snippet.size();
          }
          if (extra) {
            *extra += key + "|" + op.a + "|" + std::to_string(rank) + "|" + std::to_string(score);
            if (w == Workload::snippets) *extra += "|" + snippet;
            *extra += "\n";
          }
          if (digest) *digest += key + "|" + op.a + "|" + std::to_string(rank) + "|" + path + "|" + title + "\n";
        } else if (digest) {
          *digest += key + "|" + op.a + "|" + std::to_string(rank) + "|" + path + "|" + it.getTitle() + "\n";
        }
      }
      break;
    }
    case Workload::lookups: {
      zim::Entry e = ar.getEntryByPath(op.a);
      zim::Entry t = ar.getEntryByTitle(op.b);
      std::string mime = e.getItem(true).getMimetype();
      n += mime.size() + t.getPath().size();
      if (digest) *digest += key + "|" + op.a + "|" + e.getTitle() + "|" + t.getPath() + "|" + mime + "\n";
      break;
    }
    case Workload::content: {
      zim::Blob blob = ar.getEntryByPath(op.a).getItem(true).getData();
      n += blob.size();
      if (digest)
        *digest += key + "|" + op.a + "|" + std::to_string(blob.size()) + "|" + sha256(blob.data(), blob.size()) + "\n";
      break;
    }
  }
  return n;
}

double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

using Clock = std::chrono::steady_clock;

double percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t idx = std::min(v.size() - 1, size_t(q * (v.size() - 1) + 0.5));
  return v[idx];
}

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (c == '\n') o += "\\n";
    else o += c;
  }
  return o + "\"";
}

int usage() {
  std::cerr << "usage: raw_search --archive KEY=PATH [...] --inputs DIR --workload "
               "paths|results|snippets|lookups|content --threads N [--hits 16] "
               "[--duration S | --passes N]\n"
               "       raw_search --list-entries PATH\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<ArchiveSpec> specs;
  std::string inputs = ".", wname = "paths";
  int threads = 1, hits = 16;
  double duration = 5;
  long iterations = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error("missing value for " + a);
      return argv[++i];
    };
    if (a == "--list-entries") {
      zim::Archive ar(next());
      for (const zim::Entry& e : ar.iterByPath()) {
        if (e.isRedirect()) continue;
        std::cout << e.getPath() << '\t' << e.getTitle() << '\t' << e.getItem().getMimetype() << '\n';
      }
      return 0;
    } else if (a == "--archive") {
      std::string v = next();
      auto eq = v.find('=');
      if (eq == std::string::npos) return usage();
      specs.push_back({v.substr(0, eq), v.substr(eq + 1)});
    } else if (a == "--inputs") inputs = next();
    else if (a == "--workload") wname = next();
    else if (a == "--threads") threads = std::stoi(next());
    else if (a == "--hits") hits = std::stoi(next());
    else if (a == "--duration") duration = std::stod(next());
    else if (a == "--passes") iterations = std::stol(next());
    else return usage();
  }
  Workload w;
  if (wname == "paths") w = Workload::paths;
  else if (wname == "results") w = Workload::results;
  else if (wname == "snippets") w = Workload::snippets;
  else if (wname == "lookups") w = Workload::lookups;
  else if (wname == "content") w = Workload::content;
  else return usage();
  if (specs.empty() || threads < 1) return usage();

  std::vector<Op> ops = load_ops(specs, inputs, w);
  if (ops.empty()) throw std::runtime_error("no operations loaded from " + inputs);
  const bool search = w == Workload::paths || w == Workload::results || w == Workload::snippets;

  struct ThreadResult {
    std::string digest, extra;
    std::vector<double> lat;
    long ops = 0;
    Clock::time_point last_end;
  };
  std::vector<ThreadResult> res(threads);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  Clock::time_point t0, t_end;

  auto body = [&](int t) {
    Worker wk;
    for (auto& s : specs) {
      wk.archives.emplace_back(s.path);
      if (search) wk.searchers.emplace_back(new zim::Searcher(wk.archives.back()));
    }
    // Verification pass = warm-up: the whole list once, from a per-thread offset so
    // threads hit different archives/clusters concurrently, digests kept in list order.
    std::vector<std::string> d(ops.size()), x(ops.size());
    size_t start = ops.size() * t / threads;
    for (size_t k = 0; k < ops.size(); ++k) {
      size_t i = (start + k) % ops.size();
      run_op(wk, specs, ops[i], w, hits, &d[i], &x[i]);
    }
    for (size_t i = 0; i < ops.size(); ++i) {
      res[t].digest += d[i];
      res[t].extra += x[i];
    }
    ready++;
    while (!go.load()) std::this_thread::yield();
    // Whole passes only, so every implementation runs the same query mix.
    ThreadResult& r = res[t];
    volatile size_t sink = 0;
    for (long pass = 0;; ++pass) {
      for (size_t k = 0; k < ops.size(); ++k) {
        auto s = Clock::now();
        sink = sink + run_op(wk, specs, ops[(start + k) % ops.size()], w, hits, nullptr, nullptr);
        r.last_end = Clock::now();
        r.lat.push_back(std::chrono::duration<double>(r.last_end - s).count());
      }
      r.ops += ops.size();
      if (iterations ? pass + 1 >= iterations : r.last_end >= t_end) break;
    }
  };

  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(body, t);
  while (ready.load() < threads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  double cpu0 = cpu_seconds();
  t0 = Clock::now();
  t_end = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(duration));
  go = true;
  for (auto& th : pool) th.join();
  double cpu1 = cpu_seconds();

  long total = 0;
  Clock::time_point last = t0;
  std::vector<double> lat;
  bool consistent = true;
  for (auto& r : res) {
    total += r.ops;
    last = std::max(last, r.last_end);
    lat.insert(lat.end(), r.lat.begin(), r.lat.end());
    consistent = consistent && r.digest == res[0].digest && r.extra == res[0].extra;
  }
  double secs = std::chrono::duration<double>(last - t0).count();
  std::string digest = sha256(res[0].digest.data(), res[0].digest.size());
  std::string extra = res[0].extra.empty() ? "" : sha256(res[0].extra.data(), res[0].extra.size());
  size_t lines = std::count(res[0].digest.begin(), res[0].digest.end(), '\n');

  std::cout << "{\"impl\": \"raw-cpp\", \"workload\": " << json_str(wname) << ", \"config\": \"threads\""
            << ", \"threads\": " << threads << ", \"ops\": " << total << ", \"seconds\": " << secs
            << ", \"ops_per_s\": " << (secs > 0 ? total / secs : 0) << ", \"p50_ms\": " << percentile(lat, 0.5) * 1e3
            << ", \"p95_ms\": " << percentile(lat, 0.95) * 1e3 << ", \"cpu_s\": " << (cpu1 - cpu0)
            << ", \"op_list_len\": " << ops.size() << ", \"digest_lines\": " << lines
            << ", \"digest\": " << json_str(digest) << ", \"extra_digest\": "
            << (extra.empty() ? "null" : json_str(extra))
            << ", \"threads_consistent\": " << (consistent ? "true" : "false") << "}" << std::endl;
  return 0;
}
