// What a search page's estimate costs against the page itself (issue 28), in
// the raw C++ libzim loop: zim::Search::getEstimatedMatches() (libzim 8.1.1:
// Enquire::get_mset(0, 0, 10), a matcher run of its own) and getResults(0, 10)
// (get_mset(0, 10), pruned), then one get_mset(0, 10, check_at_least = every
// match) on libzim's own Enquire, which counts every match in the page's run:
// is that cheaper, and the same figure?  The Enquire and the page's MSet are
// private in libzim's headers; they are reached here by the explicit-
// instantiation rule (access is not checked in a template argument there),
// against the installed header's member names, so a renamed member fails to
// compile rather than misread.  Measuring only: the extension never does it.
//   g++ -O2 -std=c++17 bench/estimate_cost.cpp -o /tmp/estimate_cost $(pkg-config --cflags --libs libzim xapian-core)
//   nice /tmp/estimate_cost ARCHIVE.zim your '"it function exit"' 'your table'
// Wall ms of the third of 3 rounds per query (the index's pages then cached).
#include <zim/archive.h>
#include <zim/search.h>
#include <xapian.h>
#include <chrono>
#include <cstdio>
#include <memory>

template <typename Tag, typename Tag::type M> struct Expose {
    friend typename Tag::type get(Tag) { return M; }
};
struct SearchEnquire {
    typedef std::unique_ptr<Xapian::Enquire> zim::Search::*type;
    friend type get(SearchEnquire);
};
template struct Expose<SearchEnquire, &zim::Search::mp_enquire>;
struct ResultMSet {
    typedef std::shared_ptr<Xapian::MSet> zim::SearchResultSet::*type;
    friend type get(ResultMSet);
};
template struct Expose<ResultMSet, &zim::SearchResultSet::mp_mset>;

static double since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

int main(int argc, char **argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s ARCHIVE.zim QUERY...\n", argv[0]);
        return 2;
    }
    zim::Archive archive(argv[1]);
    zim::Searcher searcher(archive);
    std::printf("%-24s %10s %9s %9s %10s %9s %s\n", "query", "estimate", "est ms", "page ms",
                "one pass", "pass ms", "same page");
    for (int i = 2; i < argc; i++) {
        for (int round = 0; round < 3; round++) {
            zim::Search search = searcher.search(zim::Query(argv[i]));
            auto t = std::chrono::steady_clock::now();
            int estimate = search.getEstimatedMatches();
            double est_ms = since(t);
            t = std::chrono::steady_clock::now();
            zim::SearchResultSet page = search.getResults(0, 10);
            double page_ms = since(t);
            Xapian::Enquire &enquire = *(search.*get(SearchEnquire()));
            const Xapian::MSet &pruned = *(page.*get(ResultMSet()));
            Xapian::doccount all = enquire.get_mset(0, 0).get_matches_upper_bound();
            t = std::chrono::steady_clock::now();
            Xapian::MSet counted = enquire.get_mset(0, 10, all);
            double pass_ms = since(t);
            bool same = counted.size() == pruned.size();
            for (Xapian::doccount k = 0; same && k < counted.size(); k++)
                same = *counted[k] == *pruned[k] && counted[k].get_weight() == pruned[k].get_weight();
            if (round == 2)
                std::printf("%-24s %10d %9.1f %9.1f %10u %9.1f %s\n", argv[i], estimate, est_ms, page_ms,
                            counted.get_matches_estimated(), pass_ms, same ? "yes" : "NO");
        }
    }
    return 0;
}
