# The libraries lib/Keras reads Keras model files with (docs/design/keras.md):
#   HDF5    Debian's libhdf5-dev (HDF5 1.10, serial; the C API): HDF5::HDF5
#   libzip  Debian's libzip-dev (1.7): libzip::zip
# Both required: scripts/install-deps.sh installs them. libzip is found by
# its header and library, not by its CMake package: Debian 12's
# libzip-targets.cmake names /usr/bin/zipcmp and the other tools of the
# package `zipcmp`, and fails the configuration without them.
if(TARGET libzip::zip)
  return()
endif()
find_package(HDF5 REQUIRED COMPONENTS C)
find_path(LIBZIP_INCLUDE_DIR zip.h)
find_library(LIBZIP_LIBRARY zip)
if(NOT LIBZIP_INCLUDE_DIR OR NOT LIBZIP_LIBRARY)
  message(FATAL_ERROR "libzip not found (Debian: libzip-dev; run "
                      "scripts/install-deps.sh)")
endif()
add_library(libzip::zip UNKNOWN IMPORTED)
set_target_properties(libzip::zip PROPERTIES
  IMPORTED_LOCATION ${LIBZIP_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${LIBZIP_INCLUDE_DIR})
