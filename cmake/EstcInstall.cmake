# estc as a package. `cmake --install build --prefix P` installs
#
#   P/bin/                   estc, estc-opt, estc-ckpt, estc-models
#   P/include/estc/          the public headers, spelled as in the tree
#                            ("estimator/Estimator.h", "lib/Graph/Layers.h",
#                            "runtime/CompiledModel.h"), and the generated
#                            protobuf headers they include
#                            ("lib/Graph/graph.pb.h")
#   P/lib/                   libEstcRuntime.so and the static libraries
#   P/lib/cmake/estc/        estcConfig.cmake, estcConfigVersion.cmake, the
#                            exported targets, EstcModel.cmake
#
# and a project outside the tree writes (examples/out-of-tree):
#
#   find_package(estc CONFIG REQUIRED)       # CMAKE_PREFIX_PATH=P
#   target_link_libraries(app PRIVATE estc::estimator)      # AOT, no LLVM
#   target_link_libraries(app PRIVATE estc::estimator_jit)  # + the compiler
#   estc_add_model(my_model NAME MyModel GRAPH my_model.pb) # runs P/bin/estc
#
# Exported targets (namespace estc::):
#   estc::estimator      the Estimator for models compiled ahead of time:
#                        runtime, graph builder, checkpoints, summaries,
#                        hooks, Estimator, train_and_evaluate. No LLVM.
#   estc::estimator_jit  estc::estimator plus Estimator(model_fn, ...), the
#                        in-process compiler (links libMLIR.so, libLLVM.so;
#                        the package finds MLIR 22 for it).
#   estc::runtime        what compiled code calls (estc_add_model links it).
#   estc::estc           the compiler, an imported executable.
#   estc::<Target>       each library under its CMake name (estc::EstcGraph,
#                        estc::EstcCheckpoint, ...), estc::EstcData (IDX).
#
# Nothing here lists source files or headers: libraries are exported by
# computing the link closure of the two umbrella targets, headers are
# installed by folder. Files and libraries can move between folders without
# a change here.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ESTC_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/estc)
set(ESTC_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/estc)
# Source folders whose headers are public, and the generated headers under
# the same folders of the build tree.
set(ESTC_PUBLIC_HEADER_DIRS lib estimator runtime)
# The tools a user runs.
set(ESTC_INSTALLED_TOOLS estc estc-opt estc-ckpt estc-models)

# --- The targets users link ---------------------------------------------------
add_library(estc_estimator INTERFACE)
target_link_libraries(estc_estimator INTERFACE
  EstcTraining EstcEstimator EstcHooks EstcSummary EstcCheckpoint EstcGraph
  EstcRuntime)
add_library(estc::estimator ALIAS estc_estimator)

add_library(estc_estimator_jit INTERFACE)
target_link_libraries(estc_estimator_jit INTERFACE estc_estimator
                      EstcEstimatorJit)
add_library(estc::estimator_jit ALIAS estc_estimator_jit)

# estc_add_model runs estc::estc, in the tree and out of it.
add_executable(estc::estc ALIAS estc)

set_target_properties(estc_estimator PROPERTIES EXPORT_NAME estimator)
set_target_properties(estc_estimator_jit PROPERTIES EXPORT_NAME estimator_jit)
set_target_properties(EstcRuntime PROPERTIES EXPORT_NAME runtime)
set_target_properties(estc PROPERTIES EXPORT_NAME estc)

# _estc_link_closure(<out> <targets>...): the targets of this project that
# <targets> link, transitively (what linking them drags in), themselves
# included: imported targets (protobuf, MLIR, ...) are left out.
function(_estc_link_closure out)
  set(seen)
  set(todo ${ARGN})
  while(todo)
    list(POP_FRONT todo t)
    # A static library's private dependencies appear as $<LINK_ONLY:t>.
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" t "${t}")
    if(NOT TARGET "${t}")
      continue()
    endif()
    get_target_property(aliased ${t} ALIASED_TARGET)
    if(aliased)
      set(t ${aliased})
    endif()
    get_target_property(imported ${t} IMPORTED)
    if(imported OR t IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${t})
    get_target_property(deps ${t} INTERFACE_LINK_LIBRARIES)
    if(deps)
      list(APPEND todo ${deps})
    endif()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

_estc_link_closure(_estc_core_targets estc_estimator EstcData)
_estc_link_closure(_estc_jit_targets estc_estimator_jit)
list(REMOVE_ITEM _estc_jit_targets ${_estc_core_targets})

# In the tree, targets include from the source and build roots; installed,
# from P/include/estc (install(TARGETS ... INCLUDES DESTINATION) adds it).
foreach(_t IN LISTS _estc_core_targets _estc_jit_targets)
  get_target_property(_dirs ${_t} INTERFACE_INCLUDE_DIRECTORIES)
  if(NOT _dirs)
    continue()
  endif()
  set(_wrapped)
  foreach(_d IN LISTS _dirs)
    string(FIND "${_d}/" "${PROJECT_SOURCE_DIR}/" _in_source)
    string(FIND "${_d}/" "${PROJECT_BINARY_DIR}/" _in_build)
    if(_in_source EQUAL 0 OR _in_build EQUAL 0)
      list(APPEND _wrapped "$<BUILD_INTERFACE:${_d}>")
    else()
      list(APPEND _wrapped "${_d}")
    endif()
  endforeach()
  set_property(TARGET ${_t} PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${_wrapped}")
endforeach()

# Installed programs find libEstcRuntime.so next door and LLVM/MLIR where
# they were linked from.
foreach(_t EstcRuntime ${ESTC_INSTALLED_TOOLS})
  set_target_properties(${_t} PROPERTIES
    INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}"
    INSTALL_RPATH_USE_LINK_PATH ON)
endforeach()

# --- Install rules ------------------------------------------------------------
set(_estc_destinations
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${ESTC_INSTALL_INCLUDEDIR})
install(TARGETS ${_estc_core_targets}
        EXPORT estcTargets ${_estc_destinations})
install(TARGETS ${ESTC_INSTALLED_TOOLS}
        EXPORT estcTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ${_estc_jit_targets}
        EXPORT estcJitTargets ${_estc_destinations})
install(EXPORT estcTargets NAMESPACE estc::
        DESTINATION ${ESTC_INSTALL_CMAKEDIR})
install(EXPORT estcJitTargets NAMESPACE estc::
        DESTINATION ${ESTC_INSTALL_CMAKEDIR})

foreach(_dir IN LISTS ESTC_PUBLIC_HEADER_DIRS)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${_dir}/
          DESTINATION ${ESTC_INSTALL_INCLUDEDIR}/${_dir}
          FILES_MATCHING PATTERN "*.h" PATTERN "*.proto"
          # The runtime's internals (runtime/README.md).
          REGEX "/runtime/(Gemm|KernelImpl|Parallel)\\.h$" EXCLUDE)
  install(DIRECTORY ${PROJECT_BINARY_DIR}/${_dir}/
          DESTINATION ${ESTC_INSTALL_INCLUDEDIR}/${_dir} OPTIONAL
          FILES_MATCHING PATTERN "*.pb.h" PATTERN "CMakeFiles" EXCLUDE)
endforeach()

# The MLIR the JIT was built against: "22.1" (its version file matches major
# and minor).
set(ESTC_MLIR_VERSION "${LLVM_VERSION_MAJOR}.${LLVM_VERSION_MINOR}")
configure_package_config_file(cmake/estcConfig.cmake.in
  ${PROJECT_BINARY_DIR}/estcConfig.cmake
  INSTALL_DESTINATION ${ESTC_INSTALL_CMAKEDIR})
# 0.x: a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/estcConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/estcConfig.cmake
              ${PROJECT_BINARY_DIR}/estcConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/EstcModel.cmake
        DESTINATION ${ESTC_INSTALL_CMAKEDIR})
