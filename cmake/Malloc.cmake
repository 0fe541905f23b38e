# jemalloc instead of glibc's malloc for Sextant's programs (the CLI, the GUI, the benchmarks and
# the test binaries, so tests run what users run). Why: see app/MallocConf.cpp and BENCHMARKS.md
# ("Pipeline scaling"). The fuzzers keep the sanitizer runtime's allocator.
#
#   sextant_use_malloc(TARGET)   links the target against jemalloc with Sextant's options
option(SEXTANT_JEMALLOC "Link Sextant's programs against jemalloc with transparent huge pages" ON)

if(SEXTANT_JEMALLOC)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(JEMALLOC REQUIRED IMPORTED_TARGET jemalloc)
  # An object library, so the malloc_conf definition is always linked (nothing references it;
  # jemalloc looks it up at run time) rather than dropped as an unused member of an archive.
  add_library(sextant_malloc OBJECT ${CMAKE_SOURCE_DIR}/app/MallocConf.cpp)
  target_link_libraries(sextant_malloc INTERFACE PkgConfig::JEMALLOC)
endif()

function(sextant_use_malloc target)
  if(TARGET sextant_malloc)
    target_link_libraries(${target} PRIVATE sextant_malloc)
  endif()
endfunction()
