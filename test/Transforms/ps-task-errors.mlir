// RUN: estc-opt %s --split-input-file --verify-diagnostics --est-ps-task

// expected-error @below {{est-ps-task: task 2 of 2 ps tasks}}
module attributes {estc.ps_tasks = 2 : i64, estc.ps_task = 2 : i64} {
}

// -----

// expected-error @below {{est-ps-task: the module has no @train to take the optimizer updates from}}
module attributes {estc.ps_tasks = 2 : i64, estc.ps_task = 0 : i64} {
  func.func @eval() {
    return
  }
}
