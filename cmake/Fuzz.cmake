# SEXTANT_FUZZ=ON builds the libFuzzer targets in fuzz/ with clang, and instruments every library
# they link with ASan + UBSan (only those get built: `ninja importer_fuzzer` builds ir and frontend,
# `ninja artifact_fuzzer` ir and backend, `ninja target_fuzzer` ir, passes and backend), so a memory error or undefined behaviour anywhere
# on a reader's path is a finding.
# scripts/fuzz.sh configures a build folder this way; normal builds leave it OFF.
option(SEXTANT_FUZZ "Build the libFuzzer targets with ASan+UBSan (needs clang)" OFF)
if(SEXTANT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "SEXTANT_FUZZ=ON needs clang (configure with -DCMAKE_CXX_COMPILER=clang++)")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
