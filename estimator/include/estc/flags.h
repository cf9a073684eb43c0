//===- estc/flags.h - Command-line flags ------------------------*- C++ -*-===//
//
// The --name=value flags estc's programs and examples parse, with --help and
// one-line errors.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_PUBLIC_FLAGS_H
#define ESTC_PUBLIC_FLAGS_H

#include "lib/Support/Flags.h"

#endif // ESTC_PUBLIC_FLAGS_H
