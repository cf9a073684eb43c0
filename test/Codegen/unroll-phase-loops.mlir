// RUN: estc-opt --pass-pipeline='builtin.module(func.func(est-unroll-phase-loops))' --split-input-file %s | FileCheck %s

// A fused row op's loops after convert-linalg-to-loops: the phase loop (4
// trips) holds the element loop, whose body switches on the phase. Each
// phase becomes an element loop of its own, holding its case alone.
// CHECK-LABEL: func.func @four_phases
// CHECK: scf.for %[[ROW:.*]] =
// CHECK-NOT: scf.index_switch
// CHECK: scf.for
// CHECK: arith.maxnumf
// CHECK: scf.for
// CHECK: math.exp
// CHECK: scf.for
// CHECK: arith.addf
// CHECK: scf.for
// CHECK: arith.divf
// CHECK-NOT: scf.for
// CHECK: return
func.func @four_phases(%x: memref<?x8xf32>, %y: memref<?x8xf32>, %r: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %n = memref.dim %x, %c0 : memref<?x8xf32>
  scf.for %i = %c0 to %n step %c1 {
    scf.for %p = %c0 to %c4 step %c1 {
      scf.for %j = %c0 to %c8 step %c1 {
        %v = memref.load %x[%i, %j] : memref<?x8xf32>
        %a = memref.load %r[%i] : memref<?xf32>
        %b = memref.load %y[%i, %j] : memref<?x8xf32>
        %s:2 = scf.index_switch %p -> f32, f32
        case 0 {
          %m = arith.maxnumf %a, %v : f32
          scf.yield %m, %b : f32, f32
        }
        case 1 {
          %e = math.exp %v : f32
          scf.yield %a, %e : f32, f32
        }
        case 2 {
          %t = arith.addf %a, %b : f32
          scf.yield %t, %b : f32, f32
        }
        default {
          %d = arith.divf %b, %a : f32
          scf.yield %a, %d : f32, f32
        }
        memref.store %s#0, %r[%i] : memref<?xf32>
        memref.store %s#1, %y[%i, %j] : memref<?x8xf32>
      }
    }
  }
  return
}

// -----

// The phase compared with constants (scf.if), two trips: unrolled, the
// comparisons fold.
// CHECK-LABEL: func.func @two_phases_if
// CHECK-NOT: arith.cmpi
// CHECK: scf.for
// CHECK-NEXT: memref.load
// CHECK-NEXT: memref.load
// CHECK-NEXT: arith.addf
// CHECK: scf.for
// CHECK-NEXT: memref.load
// CHECK-NEXT: memref.load
// CHECK-NEXT: arith.mulf
func.func @two_phases_if(%x: memref<8xf32>, %acc: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  scf.for %p = %c0 to %c2 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %v = memref.load %x[%j] : memref<8xf32>
      %a = memref.load %acc[] : memref<f32>
      %first = arith.cmpi eq, %p, %c0 : index
      %s = scf.if %first -> f32 {
        %t = arith.addf %a, %v : f32
        scf.yield %t : f32
      } else {
        %t = arith.mulf %a, %v : f32
        scf.yield %t : f32
      }
      memref.store %s, %acc[] : memref<f32>
    }
  }
  return
}

// -----

// Not phase loops, left alone: the induction variable indexes memory; the
// trip count is over 4; no loop inside.
// CHECK-LABEL: func.func @not_phase_loops
// CHECK-COUNT-3: scf.for
// CHECK: arith.cmpi eq
func.func @not_phase_loops(%x: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c5 = arith.constant 5 : index
  %f = arith.constant 1.0 : f32
  scf.for %p = %c0 to %c2 step %c1 {
    scf.for %j = %c0 to %c2 step %c1 {
      memref.store %f, %x[%p] : memref<16xf32>
    }
  }
  scf.for %p = %c0 to %c5 step %c1 {
    %first = arith.cmpi eq, %p, %c0 : index
    scf.if %first {
      memref.store %f, %x[%c0] : memref<16xf32>
    }
  }
  return
}
