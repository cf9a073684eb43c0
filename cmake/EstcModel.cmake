# estc_add_model(<target> NAME <Name> GRAPH <file.pb|file.pbtxt|file.mlir>
#                [MCPU <cpu>] [MATTR <features>]
#                [TARGET cpu|cuda] [GPU_ARCH <sm_XX>] [TRAIN_LOOP]
#                [REPLICAS <N>])
#
# Compiles a model graph ahead of time with estc (like tfcompile's
# tf_library): at build time it runs
#
#   estc GRAPH --emit=obj --name NAME -o <dir> [--mcpu=...] [--mattr=...]
#
# and makes <target> a static library of NAME.o that links estc::runtime,
# with <dir> on its include path, so code can `#include "NAME.h"` and use the
# class NAME (see the comment at the top of the generated header). MCPU
# defaults to x86-64-v2 for portable binaries; pass MCPU native to tune for
# the build host.
#
# TARGET cuda (docs/design/gpu.md) compiles the loops to GPU kernels for
# GPU_ARCH (default sm_90) with the CUDA toolkit of $ESTC_CUDA_PATH, else
# /usr/local/cuda, at build time; the host code is still compiled for MCPU.
# The object links no CUDA library: estc::runtime loads the driver.
#
# TRAIN_LOOP (estc --train-loop) also compiles `train_loop`, N training
# steps in one call, which RunConfig::iterations_per_loop uses.
#
# REPLICAS N (estc --replicas=N) compiles the training step for N
# data-parallel replicas (RunConfig's train_distribute with N workers): it
# averages the gradients and the loss over them (docs/design/distributed.md).
#
# The estc that runs is the target estc::estc: in estc's own tree the one it
# builds, in a project that did find_package(estc) the installed one.
function(estc_add_model target)
  cmake_parse_arguments(ARG "TRAIN_LOOP" "NAME;GRAPH;MCPU;MATTR;TARGET;GPU_ARCH;REPLICAS" ""
                        ${ARGN})
  if(NOT ARG_NAME OR NOT ARG_GRAPH)
    message(FATAL_ERROR "estc_add_model(${target}): NAME and GRAPH are required")
  endif()
  if(ARG_TARGET AND NOT ARG_TARGET MATCHES "^(cpu|cuda)$")
    message(FATAL_ERROR
            "estc_add_model(${target}): TARGET ${ARG_TARGET}: not cpu or cuda")
  endif()
  if(ARG_GPU_ARCH AND NOT ARG_TARGET STREQUAL "cuda")
    message(FATAL_ERROR
            "estc_add_model(${target}): GPU_ARCH only with TARGET cuda")
  endif()
  if(NOT ARG_MCPU)
    set(ARG_MCPU x86-64-v2)
  endif()
  get_filename_component(_graph "${ARG_GRAPH}" ABSOLUTE)
  set(_dir "${CMAKE_CURRENT_BINARY_DIR}/${target}")
  set(_outputs "${_dir}/${ARG_NAME}.o" "${_dir}/${ARG_NAME}.h"
               "${_dir}/${ARG_NAME}.manifest.json")
  set(_flags --emit=obj --name=${ARG_NAME} -o ${_dir} --mcpu=${ARG_MCPU})
  if(ARG_MATTR)
    list(APPEND _flags --mattr=${ARG_MATTR})
  endif()
  if(ARG_TARGET)
    list(APPEND _flags --target=${ARG_TARGET})
  endif()
  if(ARG_GPU_ARCH)
    list(APPEND _flags --gpu-arch=${ARG_GPU_ARCH})
  endif()
  if(ARG_TRAIN_LOOP)
    list(APPEND _flags --train-loop)
  endif()
  if(ARG_REPLICAS)
    if(NOT ARG_REPLICAS MATCHES "^[0-9]+$")
      message(FATAL_ERROR
        "estc_add_model(${target}): REPLICAS must be a number, not '${ARG_REPLICAS}'")
    endif()
    list(APPEND _flags --replicas=${ARG_REPLICAS})
  endif()
  # COMMAND estc::estc: built first (in tree); DEPENDS on its file: the model
  # is compiled again when estc changes.
  add_custom_command(
    OUTPUT ${_outputs}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_dir}
    COMMAND estc::estc ${_graph} ${_flags}
    DEPENDS $<TARGET_FILE:estc::estc> ${_graph}
    COMMENT "estc: compiling ${ARG_GRAPH} to ${ARG_NAME}.o and ${ARG_NAME}.h"
    VERBATIM)
  add_library(${target} STATIC "${_dir}/${ARG_NAME}.o")
  # ESTC_NEEDS_COMPILER: building it runs estc (test/unit's runtime label).
  set_target_properties(${target} PROPERTIES LINKER_LANGUAGE CXX
                                             ESTC_NEEDS_COMPILER ON)
  target_include_directories(${target} PUBLIC ${_dir})
  target_link_libraries(${target} PUBLIC estc::runtime)
endfunction()
