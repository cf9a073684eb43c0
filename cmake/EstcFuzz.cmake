# The fuzzing build (ESTC_FUZZ=ON, the `fuzz` preset): the libFuzzer targets
# of test/fuzz and the libraries of lib/ they fuzz, nothing else; no LLVM or
# MLIR is looked for. See docs/fuzzing.md.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "ESTC_FUZZ needs clang and its libFuzzer (Debian: "
                      "clang-22 libclang-rt-22-dev); configure with "
                      "`cmake --preset fuzz`")
endif()

# Coverage for libFuzzer in every library a target links; the preset adds
# ASan and UBSan. The targets themselves link -fsanitize=fuzzer (its main).
if(NOT CMAKE_CXX_FLAGS MATCHES "fuzzer-no-link")
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

find_package(Protobuf 3.21 REQUIRED)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
# libpng: lib/Summary (the fuzzed event-file reader is in that library) links it.
find_package(PNG REQUIRED)
# HDF5 and libzip: lib/Keras (the keras_file target).
include(${PROJECT_SOURCE_DIR}/cmake/EstcKerasDeps.cmake)

# As the main build: warnings, include roots, binaries in bin/.
add_compile_options(-Wall -Wextra)
if(ESTC_WERROR)
  add_compile_options(-Werror)
endif()
include_directories(${PROJECT_SOURCE_DIR})
include_directories(SYSTEM ${PROJECT_BINARY_DIR})
set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)

add_subdirectory(lib)
enable_testing()
add_subdirectory(test/fuzz)
