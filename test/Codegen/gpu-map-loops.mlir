// RUN: estc-opt --est-gpu-map-loops --split-input-file %s | FileCheck %s

// An elementwise op: one thread per element of ?x4, 256 a block,
// ceil(n / 256) blocks (at least one), a bounds guard, the index
// delinearized row-major (the last dimension fastest).
// CHECK-LABEL: func.func @relu(
// CHECK-SAME: %[[X:.*]]: memref<?x4xf32>, %[[Y:.*]]: memref<?x4xf32>)
// CHECK: %[[N0:.*]] = memref.dim %[[X]], %{{.*}} : memref<?x4xf32>
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[ROWS:.*]] = arith.muli %{{.*}}, %[[N0]] : index
// CHECK: %[[N:.*]] = arith.muli %[[ROWS]], %[[C4]] : index
// CHECK: %[[C256:.*]] = arith.constant 256 : index
// CHECK: %[[CEIL:.*]] = arith.ceildivui %[[N]], %[[C256]] : index
// CHECK: %[[BLOCKS:.*]] = arith.maxui %[[CEIL]], %{{.*}} : index
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[BLOCKS]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C256]],
// CHECK: %[[BASE:.*]] = arith.muli %[[BX]], %{{.*}} : index
// CHECK: %[[ID:.*]] = arith.addi %[[BASE]], %[[TX]] : index
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[ID]], %[[N]] : index
// CHECK: scf.if %[[IN]] {
// CHECK: %[[J:.*]] = arith.remui %[[ID]], %[[C4]] : index
// CHECK: %[[I:.*]] = arith.divui %[[ID]], %[[C4]] : index
// CHECK: %[[V:.*]] = memref.load %[[X]][%[[I]], %[[J]]]
// CHECK: %[[R:.*]] = arith.maximumf %[[V]]
// CHECK: memref.store %[[R]], %[[Y]][%[[I]], %[[J]]]
// CHECK: }
// CHECK: gpu.terminator
// CHECK-NOT: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @relu(%x: memref<?x4xf32>, %y: memref<?x4xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x4xf32>) outs(%y : memref<?x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A reduction: one thread per row, the row's elements summed in order in
// that thread, the accumulator in a register (loaded and stored once).
// CHECK-LABEL: func.func @row_sum(
// CHECK-SAME: %[[X:.*]]: memref<?x4xf32>, %[[Y:.*]]: memref<?xf32>)
// CHECK: gpu.launch
// CHECK: scf.if
// CHECK: %[[INIT:.*]] = memref.load %[[Y]][%[[I:.*]]] : memref<?xf32>
// CHECK: %[[SUM:.*]] = scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32) {
// CHECK: %[[V:.*]] = memref.load %[[X]][%[[I]], %[[K]]]
// CHECK: %[[NEXT:.*]] = arith.addf %[[ACC]], %[[V]] : f32
// CHECK: scf.yield %[[NEXT]] : f32
// CHECK: memref.store %[[SUM]], %[[Y]][%[[I]]] : memref<?xf32>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @row_sum(%x: memref<?x4xf32>, %y: memref<?xf32>) {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x4xf32>) outs(%y : memref<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// No parallel loop: one thread (n = 1); linalg.index reads the loop index.
// CHECK-LABEL: func.func @first_negative(
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[CEIL:.*]] = arith.ceildivui %[[C1]], %{{.*}} : index
// CHECK: gpu.launch
// CHECK: arith.cmpi ult, %{{.*}}, %[[C1]] : index
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(
// CHECK: arith.index_cast %[[K]] : index to i64
#in = affine_map<(d0) -> (d0)>
#out = affine_map<(d0) -> ()>
func.func @first_negative(%x: memref<?xi64>, %first: memref<i64>) {
  %c0 = arith.constant 0 : i64
  %max = arith.constant 9223372036854775807 : i64
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction"]}
      ins(%x : memref<?xi64>) outs(%first : memref<i64>) {
  ^bb0(%v: i64, %acc: i64):
    %neg = arith.cmpi slt, %v, %c0 : i64
    %i = linalg.index 0 : index
    %pos = arith.index_cast %i : index to i64
    %cand = arith.select %neg, %pos, %max : i64
    %m = arith.minsi %acc, %cand : i64
    linalg.yield %m : i64
  }
  return
}

// -----

// A run-time check: a one-thread kernel that recomputes the host's reads
// of the check's operands (host code never reads a buffer) and, when the
// check failed, writes check + 1, the position and the value into the
// status slot (byte 64 of the arena). The kernel after it does nothing
// once the slot's first word is non-zero; the one before it is unguarded.
// CHECK-LABEL: func.func @checked(
// CHECK-SAME: %[[ARENA:.*]]: memref<?xi8>, %[[IDS:.*]]: memref<4xi64>, %[[OUT:.*]]: memref<4xi64>)
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: %[[STATUS:.*]] = memref.view %[[ARENA]][%[[C64]]][] : memref<?xi8> to memref<3xi64>
// CHECK: %[[FIRST:.*]] = memref.view %[[ARENA]]
// CHECK: gpu.launch
// CHECK-NOT: arith.andi
// CHECK: gpu.terminator
// CHECK-NOT: memref.load
// CHECK: gpu.launch
// CHECK: %[[POS:.*]] = memref.load %[[FIRST]][] : memref<i64>
// CHECK: %[[BAD:.*]] = arith.cmpi ne, %[[POS]]
// CHECK: %[[VALUE:.*]] = scf.if %[[BAD]] -> (i64) {
// CHECK: memref.load %[[IDS]]
// CHECK: scf.if %[[BAD]] {
// CHECK: %[[CODE:.*]] = arith.constant 3 : i64
// CHECK: memref.store %[[CODE]], %[[STATUS]][%{{.*}}] : memref<3xi64>
// CHECK: memref.store %[[POS]], %[[STATUS]][%{{.*}}] : memref<3xi64>
// CHECK: memref.store %[[VALUE]], %[[STATUS]][%{{.*}}] : memref<3xi64>
// CHECK: gpu.terminator
// CHECK: gpu.launch
// CHECK: %[[WORD:.*]] = memref.load %[[STATUS]][%{{.*}}] : memref<3xi64>
// CHECK: %[[OK:.*]] = arith.cmpi eq, %[[WORD]], %{{.*}} : i64
// CHECK: %[[GO:.*]] = arith.andi %[[OK]], %{{.*}} : i1
// CHECK: scf.if %[[GO]] {
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: gpu.terminator
// CHECK-NOT: est.check_fail_if
// CHECK: return
#in = affine_map<(d0) -> (d0)>
#out = affine_map<(d0) -> ()>
func.func @checked(%arena: memref<?xi8>, %ids: memref<4xi64>, %out: memref<4xi64>) attributes {estc.status_offset = 64 : i64} {
  %c0 = arith.constant 0 : index
  %c0_i64 = arith.constant 0 : i64
  %c5 = arith.constant 5 : i64
  %max = arith.constant 9223372036854775807 : i64
  %first = memref.view %arena[%c0][] : memref<?xi8> to memref<i64>
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction"]}
      ins(%ids : memref<4xi64>) outs(%first : memref<i64>) {
  ^bb0(%v: i64, %acc: i64):
    %bad = arith.cmpi sge, %v, %c5 : i64
    %i = linalg.index 0 : index
    %pos = arith.index_cast %i : index to i64
    %cand = arith.select %bad, %pos, %max : i64
    %m = arith.minsi %acc, %cand : i64
    linalg.yield %m : i64
  }
  %pos = memref.load %first[] : memref<i64>
  %failed = arith.cmpi ne, %pos, %max : i64
  %value = scf.if %failed -> (i64) {
    %i = arith.index_cast %pos : i64 to index
    %v = memref.load %ids[%i] : memref<4xi64>
    scf.yield %v : i64
  } else {
    scf.yield %c0_i64 : i64
  }
  est.check_fail_if %failed, %pos, %value {check = 2 : i64}
  linalg.generic {indexing_maps = [#in, #in], iterator_types = ["parallel"]}
      ins(%ids : memref<4xi64>) outs(%out : memref<4xi64>) {
  ^bb0(%v: i64, %o: i64):
    %d = arith.addi %v, %v : i64
    linalg.yield %d : i64
  }
  return
}

// -----

// Two checks on one condition (CSE made the checks of one tensor one
// condition): only the first can fail first, so the second is dropped and
// its scalars are not recomputed after the kernels in between.
// CHECK-LABEL: func.func @duplicate_checks(
// CHECK: gpu.launch
// CHECK: gpu.launch
// CHECK: arith.constant 1 : i64
// CHECK: gpu.launch
// CHECK: gpu.launch
// CHECK: arith.constant 2 : i64
// CHECK-NOT: gpu.launch
// CHECK: return
#dup_in = affine_map<(d0) -> (d0)>
#dup_out = affine_map<(d0) -> ()>
func.func @duplicate_checks(%arena: memref<?xi8>, %ids: memref<4xi64>, %more: memref<4xi64>) attributes {estc.status_offset = 64 : i64} {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c5 = arith.constant 5 : i64
  %max = arith.constant 9223372036854775807 : i64
  %first = memref.view %arena[%c0][] : memref<?xi8> to memref<i64>
  %second = memref.view %arena[%c8][] : memref<?xi8> to memref<i64>
  linalg.generic {indexing_maps = [#dup_in, #dup_out], iterator_types = ["reduction"]}
      ins(%ids : memref<4xi64>) outs(%first : memref<i64>) {
  ^bb0(%v: i64, %acc: i64):
    %bad = arith.cmpi sge, %v, %c5 : i64
    %i = linalg.index 0 : index
    %pos = arith.index_cast %i : index to i64
    %cand = arith.select %bad, %pos, %max : i64
    %m = arith.minsi %acc, %cand : i64
    linalg.yield %m : i64
  }
  %pos = memref.load %first[] : memref<i64>
  %failed = arith.cmpi ne, %pos, %max : i64
  est.check_fail_if %failed, %pos, %pos {check = 0 : i64}
  linalg.generic {indexing_maps = [#dup_in, #dup_out], iterator_types = ["reduction"]}
      ins(%more : memref<4xi64>) outs(%second : memref<i64>) {
  ^bb0(%v: i64, %acc: i64):
    %bad = arith.cmpi sge, %v, %c5 : i64
    %i = linalg.index 0 : index
    %pos2 = arith.index_cast %i : index to i64
    %cand = arith.select %bad, %pos2, %max : i64
    %m = arith.minsi %acc, %cand : i64
    linalg.yield %m : i64
  }
  %pos2 = memref.load %second[] : memref<i64>
  %failed2 = arith.cmpi ne, %pos2, %max : i64
  est.check_fail_if %failed2, %pos2, %pos2 {check = 1 : i64}
  est.check_fail_if %failed, %pos, %pos {check = 2 : i64}
  return
}

// -----

// A parallel loop an output does not index (d0 here: every row adds into
// the same 4 elements) runs inside the thread, so no two threads write one
// element: 4 threads, 3 iterations each, in order.
// CHECK-LABEL: func.func @column_sum(
// CHECK-SAME: %[[X:.*]]: memref<3x4xf32>, %[[Y:.*]]: memref<4xf32>)
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[N:.*]] = arith.muli %{{.*}}, %[[C4]] : index
// CHECK: gpu.launch
// CHECK: arith.cmpi ult, %[[ID:.*]], %[[N]] : index
// CHECK: %[[INIT:.*]] = memref.load %[[Y]][%[[ID]]]
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[INIT]]) -> (f32) {
// CHECK: memref.load %[[X]][%[[I]], %[[ID]]]
#a = affine_map<(d0, d1) -> (d0, d1)>
#b = affine_map<(d0, d1) -> (d1)>
func.func @column_sum(%x: memref<3x4xf32>, %y: memref<4xf32>) {
  linalg.generic {indexing_maps = [#a, #b], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<3x4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A sum of a run-time number of terms (the batch) into few elements (a
// bias gradient): a block of 1024 threads per output element. Each thread
// keeps 4 sums (4 loads in flight), the k-th adding terms t + 1024 k,
// t + 1024 (k + 4), ... in order from -0.0, the terms after the last whole
// group of 4096 going to the first; then (s0 + s1) + (s2 + s3), a fixed
// tree of the 1024 partial sums in shared memory, and thread 0 adding the
// total to the output's initial value.
// CHECK-LABEL: func.func @bias_gradient(
// CHECK-SAME: %[[X:.*]]: memref<?x20xf32>, %[[Y:.*]]: memref<20xf32>)
// CHECK: %[[DIM:.*]] = memref.dim %[[X]]
// CHECK: %[[ROWS:.*]] = arith.muli %{{.*}}, %[[DIM]] : index
// CHECK-DAG: %[[C1024:.*]] = arith.constant 1024 : index
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C1024]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) workgroup(%[[SHARED:.*]] : memref<1024xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[NEG0:.*]] = arith.constant -0.000000e+00 : f32
// CHECK: %[[C4096:.*]] = arith.constant 4096 : index
// CHECK: %[[C3072:.*]] = arith.constant 3072 : index
// CHECK: %[[LAST:.*]] = arith.subi %[[ROWS]], %[[C3072]] : index
// CHECK: %[[END:.*]] = arith.maxsi %[[LAST]], %{{.*}} : index
// CHECK: %[[SUMS:.*]]:4 = scf.for %[[R:.*]] = %[[T]] to %[[END]] step %[[C4096]] iter_args(%[[A0:.*]] = %[[NEG0]], %[[A1:.*]] = %[[NEG0]], %[[A2:.*]] = %[[NEG0]], %[[A3:.*]] = %[[NEG0]]) -> (f32, f32, f32, f32) {
// CHECK: %[[V0:.*]] = memref.load %[[X]][%{{.*}}, %[[B]]]
// CHECK: arith.addf %[[A0]], %[[V0]] : f32
// CHECK: arith.addf %[[A1]]
// CHECK: arith.addf %[[A2]]
// CHECK: arith.addf %[[A3]]
// CHECK: %[[TAIL:.*]] = scf.for %{{.*}} = %{{.*}} to %[[ROWS]] step %{{.*}} iter_args(%[[A:.*]] = %[[SUMS]]#0) -> (f32) {
// CHECK: %[[P01:.*]] = arith.addf %[[TAIL]], %[[SUMS]]#1 : f32
// CHECK: %[[P23:.*]] = arith.addf %[[SUMS]]#2, %[[SUMS]]#3 : f32
// CHECK: %[[SUM:.*]] = arith.addf %[[P01]], %[[P23]] : f32
// CHECK: memref.store %[[SUM]], %[[SHARED]][%[[T]]]
// CHECK: gpu.barrier
// CHECK: arith.constant 512 : index
// CHECK: gpu.barrier
// CHECK: arith.constant 1 : index
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK: %[[INIT:.*]] = memref.load %[[Y]][%[[B]]]
// CHECK: %[[TOTAL:.*]] = memref.load %[[SHARED]]
// CHECK: %[[OUT:.*]] = arith.addf %[[INIT]], %[[TOTAL]] : f32
// CHECK: memref.store %[[OUT]], %[[Y]][%[[B]]]
#bias_rows = affine_map<(d0, d1) -> (d0, d1)>
#bias_cols = affine_map<(d0, d1) -> (d1)>
func.func @bias_gradient(%x: memref<?x20xf32>, %y: memref<20xf32>) {
  linalg.generic {indexing_maps = [#bias_rows, #bias_cols], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<?x20xf32>) outs(%y : memref<20xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// An output element that moves with the loops inside the thread (no loop
// is a bare index of the output: one thread) is read and written in every
// iteration, as linalg's own loops do.
// CHECK-LABEL: func.func @diagonal_sums(
// CHECK: gpu.launch
// CHECK: scf.for
// CHECK: scf.for
// CHECK-NOT: iter_args
// CHECK: memref.load
// CHECK: memref.load
// CHECK: arith.addf
// CHECK: memref.store
#a = affine_map<(d0, d1) -> (d0, d1)>
#b = affine_map<(d0, d1) -> (d0 + d1)>
func.func @diagonal_sums(%x: memref<3x4xf32>, %y: memref<6xf32>) {
  linalg.generic {indexing_maps = [#a, #b], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<3x4xf32>) outs(%y : memref<6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A loop nest the earlier stages left on buffers (unsorted_segment_sum:
// rows may add into one segment) runs whole, in order, in one thread.
// CHECK-LABEL: func.func @segment_sum(
// CHECK-SAME: %[[DATA:.*]]: memref<7x3xf32>, %[[IDS:.*]]: memref<7xi64>, %[[OUT:.*]]: memref<4x3xf32>)
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c1{{[_0-9]*}}, {{.*}}) threads({{.*}}) in (%{{.*}} = %c1{{[_0-9]*}},
// CHECK-NEXT: scf.for
// CHECK: memref.load %[[IDS]]
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: gpu.terminator
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @segment_sum(%data: memref<7x3xf32>, %ids: memref<7xi64>, %out: memref<4x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c7 = arith.constant 7 : index
  scf.for %i = %c0 to %c7 step %c1 {
    %id = memref.load %ids[%i] : memref<7xi64>
    %s = arith.index_cast %id : i64 to index
    %lt = arith.cmpi slt, %s, %c4 : index
    scf.if %lt {
      scf.for %j = %c0 to %c3 step %c1 {
        %v = memref.load %data[%i, %j] : memref<7x3xf32>
        %o = memref.load %out[%s, %j] : memref<4x3xf32>
        %a = arith.addf %o, %v : f32
        memref.store %a, %out[%s, %j] : memref<4x3xf32>
      }
    }
  }
  return
}

// -----

// A constant global is host memory: the kernel takes the global itself
// (gpu-kernel-outlining copies it into the kernel's module), through the
// same views.
// CHECK-LABEL: func.func @add_constant(
// CHECK-NOT: memref.get_global
// CHECK: gpu.launch
// CHECK: %[[G:.*]] = memref.get_global @bias : memref<4xf32>
// CHECK: %[[V:.*]] = memref.expand_shape %[[G]]
// CHECK: memref.load %[[V]]
memref.global "private" constant @bias : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @add_constant(%x: memref<1x4xf32>, %y: memref<1x4xf32>) {
  %g = memref.get_global @bias : memref<4xf32>
  %b = memref.expand_shape %g [[0, 1]] output_shape [1, 4] : memref<4xf32> into memref<1x4xf32>
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<1x4xf32>, memref<1x4xf32>) outs(%y : memref<1x4xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.addf %in, %c : f32
    linalg.yield %s : f32
  }
  return
}
