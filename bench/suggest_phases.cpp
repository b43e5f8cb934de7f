// Where a suggestion's CPU goes (issue 28): libzim 8.1.1's SuggestionSearcher
// query rebuilt with Xapian directly, timed with parts of the Enquire switched
// off, beside the raw zim::SuggestionSearcher.  Build and run:
//   g++ -O2 -std=c++17 bench/suggest_phases.cpp -o /tmp/suggest_phases $(pkg-config --cflags --libs libzim xapian-core)
//   nice /tmp/suggest_phases ARCHIVE.zim REPS c ca cac cache pref dlgc
// Thread CPU time, median of REPS.  The query is the one libzim 8.1.1's
// SuggestionDataBase::parseQuery builds (FLAG_DEFAULT|FLAG_PARTIAL, STEM_SOME,
// OR phrase, OR anchored phrase), BM25Weight(0.001,0,1,1,0.5), sort by
// relevance then the title value (slot 0), collapse on targetPath (slot 1);
// slots as the valuesmap of archives written by this project's writer.
// Results: bench/results/suggest-scale.md.
#include <zim/archive.h>
#include <zim/item.h>
#include <zim/suggestion.h>
#include <xapian.h>
#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

static double cpu() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s ARCHIVE REPS PREFIX...\n", argv[0]);
        return 2;
    }
    const int reps = atoi(argv[2]);
    if (reps < 1) {
        fprintf(stderr, "REPS must be at least 1\n");
        return 2;
    }
    zim::Archive a(argv[1]);
    // The title index: "X/title/xapian", among the last entries in the new scheme.
    const uint32_t n = a.getAllEntryCount();
    zim::Entry e = a.getEntryByPath(n - 1);
    for (uint32_t i = n; i > 0 && i + 16 > n; i--) {
        zim::Entry x = a.getEntryByPath(i - 1);
        if (x.getPath().find("title/xapian") != std::string::npos) {
            e = x;
            break;
        }
    }
    auto where = e.getItem().getDirectAccessInformation();
    int fd = open(where.first.c_str(), O_RDONLY);
    if (fd < 0 || where.second == 0 || lseek(fd, (off_t)where.second, SEEK_SET) < 0) {
        fprintf(stderr, "%s: no readable title index\n", argv[1]);
        return 1;
    }
    Xapian::Database db(fd);
    printf("title index: %u documents, valuesmap %s\n", db.get_doccount(),
           db.get_metadata("valuesmap").c_str());
    Xapian::QueryParser qp;
    qp.set_database(db);
    qp.set_default_op(Xapian::Query::OP_AND);
    qp.set_stemmer(Xapian::Stem("en"));
    zim::SuggestionSearcher raw(a);
    for (int i = 3; i < argc; i++) {
        const std::string q = argv[i];  // already lower case: libzim lowers and unaccents
        auto build = [&](bool whole) {
            qp.set_stemming_strategy(Xapian::QueryParser::STEM_SOME);
            Xapian::Query x = qp.parse_query(q, Xapian::QueryParser::FLAG_DEFAULT |
                                                    Xapian::QueryParser::FLAG_PARTIAL);
            if (!whole)
                return x;
            qp.set_stemming_strategy(Xapian::QueryParser::STEM_NONE);
            Xapian::Query p = qp.parse_query(q);
            p = Xapian::Query(Xapian::Query::OP_PHRASE, p.get_terms_begin(), p.get_terms_end(),
                              p.get_length());
            Xapian::Query an = qp.parse_query("0posanchor " + q);
            an = Xapian::Query(Xapian::Query::OP_PHRASE, an.get_terms_begin(), an.get_terms_end(),
                               an.get_length());
            return Xapian::Query(Xapian::Query::OP_OR, Xapian::Query(Xapian::Query::OP_OR, x, p), an);
        };
        auto run = [&](const char *name, bool whole, bool sort, bool collapse) {
            std::vector<double> v;
            Xapian::MSet m;
            for (int k = 0; k < reps; k++) {
                double t = cpu();
                Xapian::Enquire en(db);
                en.set_query(build(whole));
                en.set_weighting_scheme(Xapian::BM25Weight(0.001, 0, 1, 1, 0.5));
                if (sort)
                    en.set_sort_by_relevance_then_value(0, false);
                if (collapse)
                    en.set_collapse_key(1);
                m = en.get_mset(0, 10);
                v.push_back(cpu() - t);
            }
            std::sort(v.begin(), v.end());
            printf("  %-34s %8.2f ms  estimated matches %u\n", name, v[v.size() / 2],
                   m.get_matches_estimated());
        };
        printf("%s: %s\n", q.c_str(), build(true).get_description().c_str());
        {
            double t = cpu();
            for (int k = 0; k < reps; k++)
                build(true);
            printf("  %-34s %8.2f ms\n", "parse (all three)", (cpu() - t) / reps);
        }
        {
            std::vector<double> v;
            for (int k = 0; k < reps; k++) {
                double t = cpu();
                auto r = raw.suggest(q).getResults(0, 10);
                size_t len = 0;
                for (auto it = r.begin(); it != r.end(); ++it)
                    len += (*it).getTitle().size();
                v.push_back(cpu() - t);
                (void)len;
            }
            std::sort(v.begin(), v.end());
            printf("  %-34s %8.2f ms\n", "raw zim::SuggestionSearcher, 10", v[v.size() / 2]);
        }
        run("Enquire as libzim's", true, true, true);
        run("without the collapse", true, true, false);
        run("without the value sort", true, false, true);
        run("without either", true, false, false);
        run("partial-term subquery only", false, true, true);
    }
    return 0;
}
