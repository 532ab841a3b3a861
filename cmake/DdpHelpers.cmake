# Small helpers so each area (apps/*, tools/*, bench/*, tests/*) registers itself by folder, without
# editing a shared list.

# Add every immediate subfolder of DIR that has a CMakeLists.txt.
function(ddp_add_subdirectories dir)
  file(GLOB children LIST_DIRECTORIES true "${CMAKE_CURRENT_SOURCE_DIR}/${dir}/*")
  list(SORT children)
  foreach(child IN LISTS children)
    if(IS_DIRECTORY "${child}" AND EXISTS "${child}/CMakeLists.txt")
      add_subdirectory("${child}")
    endif()
  endforeach()
endfunction()

# ddp_add_gtest(NAME SOURCES a.cpp b.cpp [LIBS x y] [TIMEOUT s] [LABELS l] [VARIANT prefix VAR=value])
# (NAME is a label too). VARIANT registers every test a second time, named prefix + test, run with
# the environment variable set (test_gloo: "tcp." with DDP_SHM=0).
# One GoogleTest executable linked with the multi-process test support (tests/support), registered
# with ctest test by test. Executables re-run themselves as worker processes (see multiprocess.h).
function(ddp_add_gtest name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LIBS;LABELS;VARIANT" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ddp_test_support ${ARG_LIBS})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  # Instrumented builds run slower (cmake/DdpSanitizers.cmake): ASan ~2x, TSan up to ~10x.
  if(DDP_SANITIZE MATCHES "thread")
    math(EXPR ARG_TIMEOUT "${ARG_TIMEOUT} * 5")
  elseif(DDP_SANITIZE)
    math(EXPR ARG_TIMEOUT "${ARG_TIMEOUT} * 3")
  endif()
  gtest_discover_tests(${name}
    DISCOVERY_TIMEOUT 120
    TEST_LIST ${name}_TESTS
    PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  if(ARG_VARIANT)
    list(GET ARG_VARIANT 0 _prefix)
    list(GET ARG_VARIANT 1 _env)
    gtest_discover_tests(${name}
      TEST_PREFIX ${_prefix}
      DISCOVERY_TIMEOUT 120
      TEST_LIST ${name}_VARIANT_TESTS
      PROPERTIES TIMEOUT ${ARG_TIMEOUT} ENVIRONMENT "${_env}")
  endif()
  # Each test carries its executable's name as a label, so a script can run the tests of the
  # executables it built (scripts/sanitize.sh: ctest -L '^(test_store|test_gloo)$'), and the LABELS
  # given (quick, gpu). They are set by a ctest include file that runs after discovery's: a list
  # passed through gtest_discover_tests' PROPERTIES loses its semicolons and with them every label
  # but the first (`ctest -L gpu` found no test).
  set(_labels_file "${CMAKE_CURRENT_BINARY_DIR}/${name}_labels.cmake")
  file(WRITE "${_labels_file}"
    "foreach(_test IN LISTS ${name}_TESTS ${name}_VARIANT_TESTS)\n"
    "  set_tests_properties(\"\${_test}\" PROPERTIES LABELS \"${name};${ARG_LABELS}\")\n"
    "endforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${_labels_file}")
endfunction()

# ddp_test_internal_units(TARGET src/ddp/area/unit.cpp ...)
# A test of libddp internals compiles the units it tests into itself: libddp exports only its public
# API (hidden visibility), and the internal headers are reachable only from src/. Only units without
# global state belong here; one with state would exist twice in the process (the test's copy and
# libddp's). tests/package/check_layering.py lists the tests that may include internal headers.
function(ddp_test_internal_units target)
  foreach(unit IN LISTS ARGN)
    target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/${unit})
  endforeach()
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  # The units use the helpers of src/util, as libddp does (its copy there is hidden).
  target_link_libraries(${target} PRIVATE ddp_util)
endfunction()
