# sextant_library(NAME DIR DEPS ...): one static library per source folder. Sources are the .cpp
# files of the folder (and its ops/ subfolder), globbed with CONFIGURE_DEPENDS so adding a file
# needs no edit here.
function(sextant_library name)
  cmake_parse_arguments(ARG "" "" "DEPS;PRIVATE_DEPS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp ${CMAKE_CURRENT_SOURCE_DIR}/*/*.cpp)
  if(NOT srcs)
    # A folder with headers only (or not written yet): still a target others can link.
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${CMAKE_SOURCE_DIR})
    target_link_libraries(${name} INTERFACE ${ARG_DEPS})
    return()
  endif()
  add_library(${name} STATIC ${srcs})
  target_include_directories(${name} PUBLIC ${CMAKE_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
endfunction()

# sextant_gtest(NAME DEPS ...): one GoogleTest binary from the .cpp files of the current tests/
# folder; every test in it is registered with ctest.
function(sextant_gtest name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  if(NOT srcs)
    return()
  endif()
  add_executable(${name} ${srcs})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    SEXTANT_SHARED_DIR="${SEXTANT_SHARED_DIR}"
    SEXTANT_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
    SEXTANT_BINARY_DIR="${CMAKE_BINARY_DIR}")
  include(GoogleTest)
  # SEXTANT_CHECK_SNAPSHOTS: snapshots compare every node they share by version as well (see
  # passes/SnapshotState.cpp); `make test` sets it for the other tests too.
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600
    ENVIRONMENT SEXTANT_CHECK_SNAPSHOTS=1)
endfunction()
