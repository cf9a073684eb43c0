/*===- estc/c_api.h - The C API of an exported estc model ---------*- C -*-===*
 *
 * Loading an export and running its signatures from C (docs/serving.md,
 * "From C"): estc_saved_model_load, estc_saved_model_run, ... Link
 * estc::c_api, or `pkg-config --cflags --libs estc-c`.
 *
 *===----------------------------------------------------------------------===*/
#ifndef ESTC_PUBLIC_C_API_H
#define ESTC_PUBLIC_C_API_H

#include "runtime/serving/c_api.h"

#endif /* ESTC_PUBLIC_C_API_H */
