//===- Passes.td - estc code generation passes -------------*- tablegen -*-===//
//
// The passes of the stages after the linalg stage, by stage, in the order
// they run (compiler/Pipelines/Pipelines.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_COMPILER_CODEGEN_PASSES_TD
#define ESTC_COMPILER_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// fusion stage
//===----------------------------------------------------------------------===//

def EstFusion : Pass<"est-fusion", "func::FuncOp"> {
  let summary = "Fuse elementwise linalg.generics into producers/consumers";
  let description = [{
    Producer-consumer fusion of elementwise `linalg.generic`s, also into
    reductions (a reduction consumer absorbs its elementwise producers).
    A producer is fused when it has one use, or when every user is a
    `linalg.generic` (it is then recomputed in each and disappears). A
    producer with transcendental or division ops is not fused into a
    consumer that reads it through a broadcasting map (that would repeat it
    per broadcast element).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

//===----------------------------------------------------------------------===//
// bufferize stage
//===----------------------------------------------------------------------===//

def EstFunctionAbi : Pass<"est-function-abi", "ModuleOp"> {
  let summary = "Give every function the buffer ABI of the code generation contract";
  let description = [{
    Rewrites every function on tensors into the C ABI of
    docs/design/codegen-abi.md: the arguments become
    `(arena: memref<?xi8>, every module variable in declaration order,
    the inputs, the outputs)`, all memrefs with identity layout (i1 stored
    as i8), and the function returns nothing.

    In the body, `est.read_variable` becomes the variable's current value:
    `bufferization.to_tensor %var restrict` (`writable` when the function
    assigns the variable) until an `est.assign_variable` replaces it, so a
    read after an assignment sees the assigned value. At the end every
    assigned variable's last value and every result are written with
    `bufferization.materialize_in_destination` (results `restrict`, so empty
    tensor elimination can compute them in the output buffer). Every use of
    a `tensor.empty` or tensor `linalg.fill` gets its own copy (CSE shares
    them), so that elimination never puts two results in one output buffer.

    The `est.variable` ops are erased; the module records them as
    `estc.variables = [{name, type, trainable, local}, ...]`. Functions are marked
    `llvm.emit_c_interface`.
  }];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def EstLinalgToRuntimeCalls : Pass<"est-linalg-to-runtime-calls", "ModuleOp"> {
  let summary = "Bufferized matmuls and convolutions to estc runtime kernel calls";
  let description = [{
    On buffers (after one-shot bufferization) rewrites
    `linalg.matmul` (f32, f64; with or without transposed operands via
    `linalg.transpose`-free indexing maps), `linalg.batch_matmul` (f32, f64)
    and `linalg.conv_2d_nhwc_hwcf` (f32) into calls to
    `estc_matmul_f32/_f64` and `estc_conv2d_nhwc_hwio_f32`
    (runtime/README.md), declared `llvm.emit_c_interface`. 2-D operands are
    expanded to rank 3 with a unit batch. A zero fill of the output right
    before the kernel is dropped (kernels overwrite); any other initial
    value is added after the call. A convolution whose input is a bufferized
    zero `tensor.pad` reads the unpadded input directly with `pad_top` /
    `pad_left` set.

    Epilogues are fused by est-fuse-epilogues, which runs next. Other
    linalg ops are left for loops.

    With `device=cuda` the calls are the CUDA kernels' (`estc_cuda_*`,
    docs/design/gpu.md; same operands), and a convolution whose padding is
    not the same on both sides (pad_bottom != pad_top or pad_right !=
    pad_left, from the shapes) stays a loop nest: cuDNN pads both sides
    equally.
  }];
  let options = [
    Option<"device", "device", "std::string", /*default=*/"\"cpu\"",
           "The kernels' device: cpu (estc_*) or cuda (estc_cuda_*)">
  ];
  let dependentDialects = [
    "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::arith::ArithDialect"
  ];
}

def EstFuseEpilogues : Pass<"est-fuse-epilogues", "ModuleOp"> {
  let summary = "Elementwise act(C + bias) after an f32 kernel call into the call";
  let description = [{
    Right after est-linalg-to-runtime-calls, visiting its matmul and
    convolution calls in order: an f32 kernel call whose output C is then
    read by one parallel `linalg.generic` computing `act(C + bias)` —
    `bias` a 1-D buffer broadcast along the last dim, act none (`addf`),
    relu (`maximumf(addf, 0)`) or relu6 (`minimumf(maximumf(addf, 0), 6)`),
    operands in either order — written in place into C or into another
    buffer D (C then a dead temporary) becomes one call of
    `estc_matmul_bias_act_f32` / `estc_conv2d_nhwc_hwio_bias_act_f32`
    writing the generic's output. When D is a buffer the kernel reads
    (bufferization reuses the previous layer's buffer), the fused call
    writes C instead and the later readers of D read C, provided none of
    them writes D. When instead every reader of C is a generic whose only
    use of C is `addf(C, bias)` with the same bias (logits read by softmax
    and argmax), the kernel adds the bias (activation none) and the readers
    read C. Nothing else is fused.

    A kernel call reads its inputs and writes its output (operand 2)
    through the views est-linalg-to-runtime-calls made for it; a C that a
    conv backprop kernel gathers is left alone. Fused kernels are declared
    in the order the calls first need them, as est-linalg-to-runtime-calls
    declares its kernels.
  }];
  let dependentDialects = [
    "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::arith::ArithDialect"
  ];
}

def EstInlineSmallMatmuls : Pass<"est-inline-small-matmuls", "ModuleOp"> {
  let summary = "Small f32 matmul kernel calls to vector code in place";
  let description = [{
    After est-fuse-epilogues, on the CPU: a call of `estc_matmul_f32` or
    `estc_matmul_bias_act_f32` on 2-D buffers (through the kernel argument
    views) whose product is small in its static dimensions becomes an
    `scf.for` of `vector` arithmetic computing the same C = act(op(A) x
    op(B) + bias), C's rows as vectors of 8 lanes and one for the rest
    (masked loads when the rest is not 1, 2 or 4 columns): over C's rows
    when N and K are static and N * K <= max-row-work, or over K with
    blocks of C's rows accumulated in registers when M and N are static and
    M * N <= max-column-work (the weight gradients of small layers, summed
    over a dynamic batch). Every sum runs over k in order with a multiply
    and an add (no FMA), so the code gives the same bits on every target. A
    fully static product above max-static-work multiply-adds stays a call.
    C's last dimension must be contiguous, and B's unless B is transposed
    (rows form: its K columns are gathered once before the loop).
  }];
  let options = [
    Option<"maxRowWork", "max-row-work", "int64_t", /*default=*/"256",
           "Largest N * K computed a row of C at a time">,
    Option<"maxColumnWork", "max-column-work", "int64_t", /*default=*/"128",
           "Largest M * N accumulated over a dynamic K">,
    Option<"maxStaticWork", "max-static-work", "int64_t", /*default=*/"32768",
           "Largest M * N * K of a fully static product inlined">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

//===----------------------------------------------------------------------===//
// memplan stage
//===----------------------------------------------------------------------===//

def EstMemoryPlanning : Pass<"est-memory-planning", "ModuleOp"> {
  let summary = "Place every temporary buffer of a step in the arena argument";
  let description = [{
    Every `memref.alloc` of a function becomes a `memref.view` into its
    first argument (the arena). Each allocation's byte size is
    `s + p * batch` (found by evaluating its size computation at batch 1, 2
    and 3, where every dynamic dimension of an argument is the batch). The
    arena has a static region (allocations with p = 0, at constant offsets)
    followed by a per-example region (the others, at offsets `o * batch`, each
    sized `round64(s + p) * batch`). Offsets come from a greedy best fit by
    size over live intervals, so buffers with disjoint lifetimes share bytes;
    all offsets are 64-byte aligned for every batch.

    The module gets `estc.arena = {f = array<i64: S, P>}`
    (`arena_bytes(batch) = S + P * batch`) and each function
    `estc.arena_bytes_batch128`. A function with `est.check_fail_if` ops
    gets a 64-byte status slot at the end of the static region: its entry
    is `array<i64: S, P, status offset>` and the function gets
    `estc.status_offset`. Fails if an allocation remains or a size
    is not linear in the batch.
  }];
  let dependentDialects = [
    "::mlir::memref::MemRefDialect",
    "::mlir::arith::ArithDialect"
  ];
}

//===----------------------------------------------------------------------===//
// llvm stage
//===----------------------------------------------------------------------===//

def EstMemrefCopyToLinalg : Pass<"est-memref-copy-to-linalg", "func::FuncOp"> {
  let summary = "memref.copy to linalg.copy, so copies become loops";
  let description = [{
    The LLVM lowering turns a `memref.copy` of non-contiguous memrefs into a
    call to `memrefCopy` of MLIR's C runner library, which compiled models
    do not link. As `linalg.copy` it becomes loops like every other op.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def EstLoadScalarOperands : Pass<"est-load-scalar-operands", "func::FuncOp"> {
  let summary = "Rank-0 buffer inputs of linalg.generic loaded once, before the op";
  let description = [{
    A `linalg.generic` on buffers that reads a rank-0 memref (Adam's step
    size, a loss scale) reads it at every iteration of its loops. When that
    scalar lives in the arena, like the op's output, LLVM's loop vectorizer
    cannot tell the loads from the stores and leaves the loop scalar. This
    pass loads the value once before the op (`memref.load`) and passes it as
    a scalar operand; the indexing map (no results) is unchanged.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def EstCollapseLoopDims : Pass<"est-collapse-loop-dims", "func::FuncOp"> {
  let summary = "Unused inputs dropped and contiguous loops merged in linalg.generic on buffers";
  let description = [{
    For LLVM's vectorizer: a `linalg.generic` on buffers loses the inputs
    its body never reads, then consecutive loops of the same iterator type
    that every indexing map keeps as one contiguous run of dimensions (or
    leaves out) become one loop (linalg::collapseOpIterationDims, with
    `memref.collapse_shape` views of the buffers). An elementwise op over
    `?x24x24x20` becomes one loop over `?x11520`; a reduction over N, H and W
    one reduction loop. The order of every reduction is unchanged.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect"];
}

def EstParallelizeLoops : Pass<"est-parallelize-loops", "ModuleOp"> {
  let summary = "Large loop nests on buffers to chunks on the runtime's thread pool";
  let description = [{
    A linalg op on buffers (generic, fill, copy, pooling, ...) whose
    outermost loop is parallel, whose every output is indexed by that loop
    (`d0` is one of the output map's results, so chunks of it write disjoint
    elements), that names no runtime kernel (`library_call`) and that does
    at least `min-work` operations (static trip counts times the body's
    operations, 10 per math op; a dynamic dimension counts as large) is
    lowered to an `scf.for` nest here, and the nest is moved into a private
    function

      `func.func private @<f>_pfor<i>(%lo: index, %hi: index, captures...)`

    running the outermost loop from `lo` to `hi`. Constants, index
    arithmetic and views of a buffer (subviews, reshapes, casts) it uses are
    cloned in, so one buffer reached through two views is one pointer
    there; the buffers themselves (each `memref.view` of the arena, the
    function's arguments), loaded scalars and sizes are arguments, one
    pointer per buffer, which est-outline-loop-nests marks noalias when
    they are distinct (as for the nests it outlines; it also keeps their
    short innermost loops rolled). Where the nest was, a call of the marker
    declaration `@<f>_pfor<i>_launch(n, cost, captures...)`
    (`estc.parallel_body = @<f>_pfor<i>`) passes the outer trip count and
    the operations per outer iteration; est-lower-parallel-calls turns it
    into a call of the runtime's `estc_parallel_for`, which splits `[0, n)`
    into chunks fixed by `n` and `cost` alone (runtime/README.md), so every
    element is computed by the same code for any thread count.
    Reductions are never split: an op whose outermost loop is a reduction is
    left alone, and a reduction inside an outer iteration runs whole.
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"200000",
           "Operations below which a static loop nest stays inline (the "
           "runtime runs less than this on one thread anyway)">
  ];
  let dependentDialects = [
    "::mlir::func::FuncDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::affine::AffineDialect"
  ];
}

def EstOutlineLoopNests : Pass<"est-outline-loop-nests", "ModuleOp"> {
  let summary = "Each linalg op on buffers into a function of its own whose distinct buffers are noalias";
  let description = [{
    Every linalg op on buffers of a public function (a runtime kernel call,
    `library_call`, excepted) moves into `func.func private
    @<function>_loop<i>` (`passthrough = ["noinline"]`), called where the
    op was. Constants are cloned in; every other value the op uses is an
    argument. A buffer argument whose root (through casts, reshapes and
    subviews) is distinct from every other buffer argument's (different
    `memref.view`s of the arena, which est-memory-planning never overlaps
    for buffers used by one op; different function arguments other than
    the arena; globals) is noalias: the LLVM positions of its descriptor's
    pointers are listed in `estc.noalias_args` for est-noalias-to-llvm.
    With them the loop vectorizer needs no run-time overlap checks. The
    functions stay calls: inlined into a step of thousands of loops, LLVM's
    loop and scheduling passes made a large model's compile 1.7x slower,
    for steps no faster. The
    nests est-parallelize-loops moved out (launch calls of
    `estc.parallel_body` functions) get the same facts on their body's
    arguments. A short (<= 64) innermost loop is marked `unroll disable`
    in all-parallel nests and in every parallel body, so LLVM vectorizes
    the contiguous channels rather than unroll them and vectorize across
    pixels with gathers.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def EstUnrollPhaseLoops : Pass<"est-unroll-phase-loops", "func::FuncOp"> {
  let summary = "Phase loops of the fused row ops unrolled, so each phase is a loop of its own";
  let description = [{
    The fused row ops (layer norm, the attention softmax and their
    gradients; compiler/Conversion/EstToLinalg/Normalization.cpp) visit a
    row once per phase: their loops are `(rows..., phase, elements...)` and
    the body branches on the phase. Left so, the element loop holds both
    phases' code behind a branch and LLVM vectorizes neither. This pass
    fully unrolls every `scf.for` with a constant trip count of at most 4
    whose induction variable is only compared with constants (`arith.cmpi`)
    or switched on (`scf.index_switch`) and that contains a loop; the
    comparisons and switches fold, each `scf.if` keeps one branch, and each
    phase becomes a plain element loop. Same operations in
    the same order.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def EstLowerRuntimeChecks
    : Pass<"est-lower-runtime-checks", "func::FuncOp"> {
  let summary = "Expand est.check_fail_if into a status store and a return";
  let description = [{
    Once the function body is in `cf` form, each
    `est.check_fail_if %failed, %position, %value {check = k}` becomes a
    conditional branch: when `%failed`, the function stores `k + 1`,
    `%position` and `%value` (i64 each) at byte `estc.status_offset` of its
    arena (first argument) and returns; the rest of the step, its variable
    updates included, does not run. The runtime clears the first word
    before each call and raises the check's error when it is non-zero
    (docs/design/codegen-abi.md, "Run-time checks").
  }];
  let dependentDialects = [
    "::mlir::cf::ControlFlowDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::arith::ArithDialect"
  ];
}

def EstExpandShapeToReinterpretCast
    : Pass<"est-expand-shape-to-reinterpret-cast", "func::FuncOp"> {
  let summary = "memref.expand_shape splitting a dimension into several run-time ones, as a reinterpret_cast";
  let description = [{
    A `memref.expand_shape` of a row-major buffer that splits one dimension
    into several dynamic ones (`[batch * T, H]` into `[batch, T, H]`, what a
    matmul over a sequence input's steps gives back) becomes a
    `memref.reinterpret_cast` of the same buffer with the output shape and
    its row-major strides. MLIR 22's `expand-strided-metadata` crashes on
    such an expand_shape (a null stride attribute in
    `memref::ReinterpretCastOp::build`); the reinterpret_cast, which it
    handles, is the same view. Runs right before it. Expansions with at
    most one dynamic dimension per group, or of strided buffers, are left
    alone.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def EstApproximateMath : Pass<"est-approximate-math", "func::FuncOp"> {
  let summary = "f32 exp, log and friends as polynomials LLVM can vectorize";
  let description = [{
    On the CPU, a `math.exp` left as it is becomes a call of libm's scalar
    `expf`, one per element: LLVM's loop vectorizer cannot widen a loop
    that calls it, so a softmax, a sigmoid gate or a cross entropy runs one
    element at a time. This pass rewrites the f32 `math` ops named in `ops`
    (by mnemonic) into MLIR's polynomial approximations
    (`populateMathPolynomialApproximationPatterns`; exp is our own
    expansion, log's subnormals are scaled first, tanh saturates to +-1):
    plain arith on the element, vectorized with the rest of its loop. Their
    error against the correctly rounded result is measured over the whole
    float range by MathAccuracyTest (docs/conventions.md, "Floating
    point"); f64 ops and ops not named stay libm calls. Runs before
    `math-expand-ops` (which would turn tanh into an exp formula) and again
    after it (the exps and logs of its expansions).
  }];
  let options = [
    ListOption<"ops", "ops", "std::string",
               "The math op mnemonics to approximate">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def EstLowerParallelCalls : Pass<"est-lower-parallel-calls", "ModuleOp"> {
  let summary = "Calls of est-parallelize-loops markers to estc_parallel_for";
  let description = [{
    In the LLVM dialect (after func-to-llvm, so memref descriptors are
    expanded into their fields): every call of a declaration marked
    `estc.parallel_body = @body`, with operands `(n, cost, captures...)`,
    stores the captures into a stack struct (allocated once in the caller's
    entry block) and calls
    `estc_parallel_for(@body_trampoline, ctx, n, cost)`; the new internal
    `void @body_trampoline(ptr ctx, i64 lo, i64 hi)` loads the captures and
    calls `@body(lo, hi, captures...)`. The marker is erased. Fails with one
    error when the marker's body is missing or their signatures differ.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def EstGpuMapLoops : Pass<"est-gpu-map-loops", "ModuleOp"> {
  let summary = "Every linalg op on buffers and every run-time check to a gpu.launch";
  let description = [{
    CUDA's gpu stage (docs/design/gpu.md). In every function, each linalg
    op on buffers becomes one `gpu.launch` over its parallel iterations —
    those whose loop every output indexes directly, so two threads never
    write one element — linearized to one dimension: 256 threads a block,
    `ceil(n / 256)` blocks (at least one), a bounds guard, the index
    delinearized row-major (the last loop fastest, so neighbouring threads
    touch neighbouring elements). The other iterations (reductions) run as
    `scf.for` loops inside the thread, in the op's order, so a result does
    not depend on the launch shape; an accumulator whose output element
    does not move with them is kept in registers (`iter_args`) and stored
    once. An op without parallel iterations is one thread. A sum (the
    body yields `arith.addf` of the f32 output and a term) of a run-time
    number of terms, or of at least 256, into at most 65536 elements known
    at compile time (a bias gradient, a loss) is instead one block per
    output element: each of its 1024 threads keeps 4 sums (4 loads in
    flight), each over every 4096th term in order, and adds them,
    then the partial sums are added in a fixed tree in shared memory, so
    the GPU is not left idle while few threads walk the batch, and the
    order still depends only on the block size.

    `est.check_fail_if %failed, %position, %value {check = k}` becomes a
    one-thread kernel that, when `%failed`, writes `k + 1`, `%position` and
    `%value` into the status slot (byte `estc.status_offset` of the arena).
    Every kernel launched after a function's first check begins with
    `if (status[0] != 0) return`, so the step's later kernels (its variable
    updates) do nothing once a check has failed, without the host waiting
    for the device.

    Host code must never read or write a buffer (every buffer is device
    memory): a scalar a kernel uses that the host computed from buffers
    (`memref.load` and the arithmetic on it) is recomputed inside the
    kernel, and a `memref.load` or `memref.store` still on the host
    afterwards is an error.
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::affine::AffineDialect"
  ];
}

def EstGpuMergeKernelModules : Pass<"est-gpu-merge-kernel-modules", "ModuleOp"> {
  let summary = "Every outlined kernel into one gpu.module, estc_kernels";
  let description = [{
    CUDA's gpu stage, after gpu-kernel-outlining, which gives each kernel a
    gpu.module of its own: moves every kernel and the constant globals
    outlining copied next to it into one module, `estc_kernels` (a global
    copied into several kernels' modules is kept once; two different
    definitions of one name are an error), and points every
    `gpu.launch_func` at it. One module is one ptxas and fatbinary run at
    compile time and one image to load at run time, where a module per
    kernel cost a run per kernel (about a hundred for a ConvNet's step).
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def EstNoAliasToLLVM : Pass<"est-noalias-to-llvm", "ModuleOp"> {
  let summary = "estc.noalias_args of LLVM functions to llvm.noalias arguments";
  let description = [{
    After func-to-llvm: the arguments listed in a function's
    `estc.noalias_args` (pointers of memref descriptors, recorded by
    est-outline-loop-nests) get `llvm.noalias`; the list is removed. A
    branch's discardable `llvm.loop_annotation` (an scf.for's, copied to
    its latch by scf-to-cf) becomes the branch's `loop_annotation`, which
    the translation to LLVM IR emits as `!llvm.loop` metadata.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // ESTC_COMPILER_CODEGEN_PASSES_TD
