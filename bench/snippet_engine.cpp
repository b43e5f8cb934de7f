// Per-snippet cost: libzim-c's snippet engine against libzim's getSnippet(),
// on the same article, already read (no Python).
//
// Built by bench/snippets.py:
//   g++ -O2 -std=c++17 -I../src snippet_engine.cpp ../src/zimshim_{snippet,core,cluster,file}.cpp \
//       -o snippet_engine $(pkg-config --cflags --libs libzim libzstd liblzma)
//
// Usage:
//   snippet_engine --archive KEY=PATH [...] --inputs DIR [--hits 16] [--engine both|ours|libzim|none]
//                  [--dump FILE]
//
// Times are thread CPU time.  For every query of DIR/<KEY>.queries.txt and every hit: reads the article
// (getData, timed as "read"), then times libzim's getSnippet() (the cluster is
// now in libzim's cache, so this is its parse + Xapian snippet + a copy) and our
// engine on the bytes already read.  --engine none|ours|libzim runs only that
// part, for instruction counts under callgrind (subtract "none").
// Output: one JSON object on stdout; --dump writes key, query, path, libzim's snippet, ours, article bytes,
// libzim us, ours us per hit (tab-separated).

#include "zimshim_snippet.hpp"

#include <zim/archive.h>
#include <zim/item.h>
#include <zim/search.h>

#include <algorithm>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

// Thread CPU time, not wall time: the machines these run on are shared, and
// a preempted call would otherwise count the other processes' time.
struct Clock {
    using time_point = double;
    static double now() {
        timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
    }
};

double us_since(double t0) { return Clock::now() - t0; }

std::vector<std::string> read_lines(const std::string &file) {
    std::ifstream in(file);
    if (!in)
        throw std::runtime_error("cannot open " + file);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);)
        if (!line.empty())
            out.push_back(line);
    return out;
}

std::string stats(std::vector<double> v) {
    if (v.empty())
        return "null";
    std::sort(v.begin(), v.end());
    double sum = 0;
    for (double x : v)
        sum += x;
    char buf[200];
    std::snprintf(buf, sizeof buf, "{\"n\": %zu, \"median_us\": %.2f, \"p95_us\": %.2f, \"mean_us\": %.2f}",
                  v.size(), v[v.size() / 2], v[std::min(v.size() - 1, v.size() * 95 / 100)],
                  sum / (double)v.size());
    return buf;
}

std::string tsv(std::string s) {
    for (char &c : s)
        if (c == '\t' || c == '\n' || c == '\r')
            c = ' ';
    return s;
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<std::pair<std::string, std::string>> archives;
    std::string inputs, engine = "both", dump;
    int hits = 16;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i], v = argv[i + 1];
        if (a == "--archive") {
            auto eq = v.find('=');
            archives.emplace_back(v.substr(0, eq), v.substr(eq + 1));
        } else if (a == "--inputs") {
            inputs = v;
        } else if (a == "--hits") {
            hits = std::stoi(v);
        } else if (a == "--engine") {
            engine = v;
        } else if (a == "--dump") {
            dump = v;
        }
    }
    bool ours = engine == "both" || engine == "ours";
    bool theirs = engine == "both" || engine == "libzim";
    std::ofstream out;
    if (!dump.empty())
        out.open(dump);
    std::vector<double> t_read, t_libzim, t_ours, t_setup;
    std::string per_archive;
    for (const auto &spec : archives) {
        zim::Archive archive(spec.second);
        zim::Searcher searcher(archive);
        zsnip::IndexLanguage lang = zsnip::index_language(archive);
        std::vector<double> a_read, a_libzim, a_ours;
        for (const std::string &q : read_lines(inputs + "/" + spec.first + ".queries.txt")) {
            auto t0 = Clock::now();
            zsnip::Snippeter snippeter(q, lang);
            t_setup.push_back(us_since(t0));
            zim::Search search = searcher.search(zim::Query(q));
            auto results = search.getResults(0, hits);
            for (auto it = results.begin(); it != results.end(); ++it) {
                zim::Item item = it->getItem(true);
                t0 = Clock::now();
                zim::Blob blob = item.getData();
                std::string data(blob.data(), blob.size());
                a_read.push_back(us_since(t0));
                std::string s_libzim, s_ours;
                double us_libzim = 0, us_ours = 0;
                if (theirs) {
                    t0 = Clock::now();
                    s_libzim = it.getSnippet();
                    a_libzim.push_back(us_libzim = us_since(t0));
                }
                if (ours) {
                    t0 = Clock::now();
                    s_ours = snippeter.make(data.data(), data.size());
                    a_ours.push_back(us_ours = us_since(t0));
                }
                if (out)
                    out << spec.first << '\t' << tsv(q) << '\t' << tsv(it.getPath()) << '\t'
                        << tsv(s_libzim) << '\t' << tsv(s_ours) << '\t' << data.size() << '\t'
                        << us_libzim << '\t' << us_ours << '\n';
            }
        }
        per_archive += (per_archive.empty() ? "" : ", ") + std::string("\"") + spec.first +
                       "\": {\"language\": \"" + lang.language + "\", \"read\": " + stats(a_read) +
                       ", \"libzim\": " + stats(a_libzim) + ", \"ours\": " + stats(a_ours) + "}";
        t_read.insert(t_read.end(), a_read.begin(), a_read.end());
        t_libzim.insert(t_libzim.end(), a_libzim.begin(), a_libzim.end());
        t_ours.insert(t_ours.end(), a_ours.begin(), a_ours.end());
    }
    std::cout << "{\"engine\": \"" << engine << "\", \"read\": " << stats(t_read)
              << ", \"libzim\": " << stats(t_libzim) << ", \"ours\": " << stats(t_ours)
              << ", \"ours_setup_per_query\": " << stats(t_setup) << ", \"archives\": {"
              << per_archive << "}}" << std::endl;
    return 0;
}
