# jemalloc instead of glibc's malloc for Sextant's programs (the CLI, the GUI, the benchmarks and
# the test binaries, so that tests run what users run). The compiler's data is millions of small
# objects (nodes, values, names, shapes, attribute maps, snapshot records) made and freed by every
# pass; with jemalloc the O2 pipeline runs in about two thirds of the time it takes with glibc's
# malloc (BENCHMARKS.md, "Pipeline scaling"). The fuzzers keep the sanitizer runtime's allocator.
#
#   sextant_use_malloc(TARGET)   links the target against jemalloc
option(SEXTANT_JEMALLOC "Link Sextant's programs against jemalloc" ON)

if(SEXTANT_JEMALLOC)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(JEMALLOC REQUIRED IMPORTED_TARGET jemalloc)
endif()

function(sextant_use_malloc target)
  if(SEXTANT_JEMALLOC)
    target_link_libraries(${target} PRIVATE PkgConfig::JEMALLOC)
  endif()
endfunction()
