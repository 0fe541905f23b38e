// The options Sextant's programs give jemalloc (linked instead of glibc's malloc when
// SEXTANT_JEMALLOC is ON, see cmake/Malloc.cmake and BENCHMARKS.md, "Pipeline scaling").
//
// The compiler's data is millions of small objects (nodes, values, names, shapes, attribute maps,
// snapshot records) walked again by every pass. On a large graph the walks are bound by address
// translation: with 4 KiB pages the TLB covers a few MB, so the 20,000-node pipeline paid a page
// walk on most accesses where the 5,000-node one mostly did not. Backing the heap with 2 MiB
// transparent huge pages keeps the walks' cost per node the same at both sizes. The machine's
// THP mode is usually "madvise", so jemalloc has to ask for them (thp:always does, per extent).
//
// jemalloc reads this symbol once, at its first allocation; MALLOC_CONF in the environment still
// overrides it (for experiments: MALLOC_CONF=thp:never).
extern "C" {
extern const char* malloc_conf;
const char* malloc_conf = "thp:always,metadata_thp:always";
}
