//===- estc/canned.h - The canned estimators and heads ----------*- C++ -*-===//
//
// TF 2.15's canned estimators (Linear, DNN, DNNLinearCombined, Baseline:
// classifiers and regressors) and heads (docs/heads.md). Their JIT
// constructors are in estc::estimator_jit (EstcCannedJit).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_PUBLIC_CANNED_H
#define ESTC_PUBLIC_CANNED_H

#include "estimator/Canned/Canned.h"
#include "estimator/Canned/Estimators.h"
#include "estimator/Canned/Head.h"

#endif // ESTC_PUBLIC_CANNED_H
