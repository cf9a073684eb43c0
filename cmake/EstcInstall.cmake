# estc as a package. `cmake --install build --prefix P` installs
#
#   P/bin/                   estc, estc-opt, estc-ckpt, estc-models,
#                            estc-serve
#   P/include/estc/estc/     the public headers users include, with the one
#                            prefix "estc/": estc/estimator.h (the umbrella),
#                            estc/graph.h, data.h, feature_column.h,
#                            canned.h, runtime.h, serving.h, flags.h, c_api.h
#                            (estimator/include/estc in the tree)
#   P/include/estc/          the headers those include, spelled as in the
#                            tree ("estimator/Estimator.h"), and the
#                            generated protobuf headers ("lib/Graph/graph.pb.h")
#   P/lib/                   libEstcRuntime.so, libestc_c.so, the static
#                            libraries; pkgconfig/estc-c.pc (the C API)
#   P/lib/cmake/estc/        estcConfig.cmake, estcConfigVersion.cmake, one
#                            targets file per component, EstcModel.cmake
#
# and a project outside the tree writes (examples/out-of-tree):
#
#   find_package(estc CONFIG REQUIRED COMPONENTS jit canned)  # P on CMAKE_PREFIX_PATH
#   target_link_libraries(app PRIVATE estc::estimator)      # AOT, no LLVM
#   target_link_libraries(app PRIVATE estc::estimator_jit)  # + the compiler
#   target_link_libraries(app PRIVATE estc::canned)         # canned estimators
#   estc_add_model(my_model NAME MyModel GRAPH my_model.pb) # runs P/bin/estc
#
# Components (`cmake --install build --component NAME` installs one;
# find_package(estc ... COMPONENTS ...) says in one line which is missing):
#   estimator    always: estc::estimator (the Estimator for models compiled
#                ahead of time: runtime, graph builder, data, feature
#                columns, checkpoints, summaries, hooks, export's receivers,
#                train_and_evaluate, distribute; no LLVM), estc::runtime,
#                estc::data, estc::feature_column, the tools, the headers
#   jit          estc::estimator_jit: + Estimator(model_fn, ...), the
#                in-process compiler (libMLIR.so, libLLVM.so: the package
#                finds MLIR 22 for it)
#   canned       estc::canned: the canned estimators and heads (needs jit)
#   keras        estc::keras: model_to_estimator, Keras model files
#                (estc/keras.h; needs jit; HDF5 and libzip, which the
#                package finds)
#   saved_model  estc::saved_model: serving::SavedModel, the loader (no LLVM)
#   c_api        estc::c_api: libestc_c.so, and pkg-config's estc-c
#   serving      estc::serving: estc-serve's libraries (REST API, batching,
#                model versions), and the estc-serve program
# Every library is also exported under its CMake name (estc::EstcGraph, ...).
#
# Nothing here lists source files or headers: a component's libraries are
# the link closure of its umbrella targets less the components before it,
# headers are installed by folder. Files and libraries can move between
# folders without a change here.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ESTC_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/estc)
set(ESTC_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/estc)
# Source folders whose headers are public, and the generated headers under
# the same folders of the build tree.
set(ESTC_PUBLIC_HEADER_DIRS lib estimator runtime tools/estc-serve)
# The tools a user runs (estc-serve: the serving component).
set(ESTC_INSTALLED_TOOLS estc estc-opt estc-ckpt estc-models)


# --- The targets users link ---------------------------------------------------
function(_estc_umbrella name export_name)
  add_library(${name} INTERFACE)
  target_link_libraries(${name} INTERFACE ${ARGN})
  set_target_properties(${name} PROPERTIES EXPORT_NAME ${export_name})
  add_library(estc::${export_name} ALIAS ${name})
endfunction()
_estc_umbrella(estc_estimator estimator
  EstcTraining EstcEstimator EstcHooks EstcSummary EstcCheckpoint EstcGraph
  EstcRuntime)
_estc_umbrella(estc_estimator_jit estimator_jit estc_estimator EstcEstimatorJit)
_estc_umbrella(estc_canned canned estc_estimator_jit EstcCanned EstcCannedJit)
_estc_umbrella(estc_keras keras estc_estimator_jit EstcKerasEstimator)
_estc_umbrella(estc_saved_model saved_model EstcSavedModel)
_estc_umbrella(estc_c_api c_api EstcC)
_estc_umbrella(estc_serving serving EstcServingSavedModel)
# Users' code includes C++20 (the options structs' designated initializers).
target_compile_features(estc_estimator INTERFACE cxx_std_20)
target_compile_features(estc_saved_model INTERFACE cxx_std_20)

# estc_add_model runs estc::estc, in the tree and out of it.
add_executable(estc::estc ALIAS estc)

set_target_properties(EstcRuntime PROPERTIES EXPORT_NAME runtime)
set_target_properties(EstcData PROPERTIES EXPORT_NAME data)
set_target_properties(EstcFeatureColumn PROPERTIES EXPORT_NAME feature_column)
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

# Each component: the closure of its umbrella targets, less every component
# before it (whose export it then names, as estc::<target>).
set(ESTC_COMPONENTS estimator saved_model c_api jit canned keras serving)
set(_estc_umbrellas_estimator estc_estimator EstcData)
set(_estc_umbrellas_saved_model estc_saved_model)
set(_estc_umbrellas_c_api estc_c_api)
set(_estc_umbrellas_jit estc_estimator_jit)
set(_estc_umbrellas_canned estc_canned)
set(_estc_umbrellas_keras estc_keras)
set(_estc_umbrellas_serving estc_serving)
set(_estc_taken)
foreach(_c IN LISTS ESTC_COMPONENTS)
  _estc_link_closure(_estc_targets_${_c} ${_estc_umbrellas_${_c}})
  if(_estc_taken)
    list(REMOVE_ITEM _estc_targets_${_c} ${_estc_taken})
  endif()
  list(APPEND _estc_taken ${_estc_targets_${_c}})
endforeach()

# In the tree, targets include from the source and build roots; installed,
# from P/include/estc (install(TARGETS ... INCLUDES DESTINATION) adds it).
foreach(_t IN LISTS _estc_taken)
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

# Installed programs and shared libraries find libEstcRuntime.so next door
# and LLVM/MLIR where they were linked from.
foreach(_t EstcRuntime EstcC estc-serve ${ESTC_INSTALLED_TOOLS})
  set_target_properties(${_t} PROPERTIES
    INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}"
    INSTALL_RPATH_USE_LINK_PATH ON)
endforeach()
set_target_properties(EstcC PROPERTIES INSTALL_RPATH "$ORIGIN")

# --- Install rules ------------------------------------------------------------
foreach(_c IN LISTS ESTC_COMPONENTS)
  install(TARGETS ${_estc_targets_${_c}}
          EXPORT estc_${_c}_targets COMPONENT ${_c}
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
          INCLUDES DESTINATION ${ESTC_INSTALL_INCLUDEDIR})
endforeach()
install(TARGETS ${ESTC_INSTALLED_TOOLS} EXPORT estc_estimator_targets
        COMPONENT estimator RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS estc-serve COMPONENT serving
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(_c IN LISTS ESTC_COMPONENTS)
  install(EXPORT estc_${_c}_targets NAMESPACE estc:: COMPONENT ${_c}
          FILE estc-${_c}-targets.cmake DESTINATION ${ESTC_INSTALL_CMAKEDIR})
endforeach()

foreach(_dir IN LISTS ESTC_PUBLIC_HEADER_DIRS)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${_dir}/
          DESTINATION ${ESTC_INSTALL_INCLUDEDIR}/${_dir} COMPONENT estimator
          FILES_MATCHING PATTERN "*.h" PATTERN "*.proto"
          # The public prefix goes to P/include/estc/estc (below).
          PATTERN "include" EXCLUDE
          # The runtime's internals (runtime/README.md).
          REGEX "/runtime/cpu/(Gemm|KernelImpl|Parallel|ConvTiles)\\.h$" EXCLUDE)
  install(DIRECTORY ${PROJECT_BINARY_DIR}/${_dir}/
          DESTINATION ${ESTC_INSTALL_INCLUDEDIR}/${_dir} COMPONENT estimator
          OPTIONAL
          FILES_MATCHING PATTERN "*.pb.h" PATTERN "CMakeFiles" EXCLUDE)
endforeach()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/estimator/include/estc/
        DESTINATION ${ESTC_INSTALL_INCLUDEDIR}/estc COMPONENT estimator)
# The compiler's headers, for estc/compiler.h (a graph compiled in process;
# LLVM's and MLIR's headers come from the MLIR the jit component finds).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/compiler/
        DESTINATION ${ESTC_INSTALL_INCLUDEDIR}/compiler COMPONENT jit
        FILES_MATCHING PATTERN "*.h")

# pkg-config for C programs: relocatable (paths from the .pc file's folder).
set(_estc_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH ESTC_PC_TO_PREFIX /P/${_estc_pc_dir} /P)
string(REGEX REPLACE "/$" "" ESTC_PC_TO_PREFIX "${ESTC_PC_TO_PREFIX}")
configure_file(cmake/estc-c.pc.in ${PROJECT_BINARY_DIR}/estc-c.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/estc-c.pc DESTINATION ${_estc_pc_dir}
        COMPONENT c_api)

# The MLIR the JIT was built against: "22.1" (its version file matches major
# and minor).
set(ESTC_MLIR_VERSION "${LLVM_VERSION_MAJOR}.${LLVM_VERSION_MINOR}")
string(REPLACE ";" " " ESTC_COMPONENTS_TEXT "${ESTC_COMPONENTS}")
configure_package_config_file(cmake/estcConfig.cmake.in
  ${PROJECT_BINARY_DIR}/estcConfig.cmake
  INSTALL_DESTINATION ${ESTC_INSTALL_CMAKEDIR})
# 0.x: a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/estcConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/estcConfig.cmake
              ${PROJECT_BINARY_DIR}/estcConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/EstcModel.cmake
        DESTINATION ${ESTC_INSTALL_CMAKEDIR} COMPONENT estimator)
