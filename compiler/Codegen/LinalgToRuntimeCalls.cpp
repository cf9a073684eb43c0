//===- LinalgToRuntimeCalls.cpp - est-linalg-to-runtime-calls -------------===//
//
// After bufferization, the heavy linalg ops become calls into EstcRuntime
// (runtime/README.md), as XLA's CPU backend calls Eigen:
//
//   linalg.matmul / batch_matmul (f32, f64)  -> estc_matmul_f32 / _f64
//   linalg.conv_2d_nhwc_hwcf (f32)          -> estc_conv2d_nhwc_hwio_f32
//   linalg.generic {library_call = "estc_conv2d_backprop_input_f32" or
//                   "estc_conv2d_backprop_filter_f32"} (convert-est-to-linalg's
//                   f32 conv backprops) -> that kernel
//   linalg.generic {library_call = "estc_depthwise_conv2d_f32",
//                   "..._backprop_input_f32", "..._backprop_filter_f32"}
//                   (f32 depthwise convolutions) -> that kernel on the CPU;
//                   a loop nest for CUDA
//
// Kernels overwrite their output, so the zero fill that initializes a
// contraction is dropped; another initial value is added after the call.
// A transpose feeding a matmul operand becomes the kernel's transpose flag,
// and a zero pad feeding a convolution becomes pad_top / pad_left.
// est-fuse-epilogues, which runs next, fuses an elementwise act(C + bias)
// after an f32 kernel into it.
//
// With device=cuda the same calls name the CUDA kernels (estc_cuda_*,
// docs/design/gpu.md), and a convolution cuDNN cannot pad (its padding not
// the same on both sides) stays a loop nest, which the gpu stage makes a
// kernel.
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen/KernelCalls.h"
#include "compiler/Codegen/Passes.h"

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTLINALGTORUNTIMECALLS
#include "compiler/Codegen/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;
using namespace mlir::est::kernels;

namespace {

bool isZero(Value value) {
  return matchPattern(value, m_AnyZeroFloat()) || matchPattern(value, m_Zero());
}

/// Whether `op` writes zero into every element of its only output: a
/// linalg.fill of zero, or a linalg.map without inputs yielding zero.
bool isZeroFill(Operation *op, Value buffer) {
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return fill.getOutputs()[0] == buffer && isZero(fill.getInputs()[0]);
  if (auto map = dyn_cast<linalg::MapOp>(op)) {
    if (!map.getInputs().empty() || map.getInit() != buffer)
      return false;
    auto yield = cast<linalg::YieldOp>(map.getMapper().front().getTerminator());
    return yield.getNumOperands() == 1 &&
           yield.getOperand(0).getParentRegion() != &map.getMapper() &&
           isZero(yield.getOperand(0));
  }
  return false;
}

/// Finds the zero fill that last wrote `output` before `op`, with nothing
/// in between touching it.
Operation *findZeroInit(Operation *op, Value output) {
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    if (isZeroFill(prev, output))
      return prev;
    // A copy of a zero-filled buffer (one zero init shared by several ops).
    if (auto copy = dyn_cast<memref::CopyOp>(prev);
        copy && copy.getTarget() == output &&
        findZeroInit(copy, copy.getSource()))
      return copy;
    if (isMemoryEffectFree(prev))
      continue;
    if (usesAny(prev, {output}))
      return nullptr;
  }
  return nullptr;
}

/// If `operand` is a buffer written only by a full transpose of the last
/// two dims (and read only by `op`), returns the transpose's input.
linalg::TransposeOp transposeFeeding(Value operand, Operation *op) {
  auto alloc = operand.getDefiningOp<memref::AllocOp>();
  if (!alloc)
    return nullptr;
  linalg::TransposeOp transpose;
  for (Operation *user : alloc->getUsers()) {
    if (user == op)
      continue;
    auto t = dyn_cast<linalg::TransposeOp>(user);
    if (!t || t.getInit() != operand || transpose)
      return nullptr;
    transpose = t;
  }
  if (!transpose)
    return nullptr;
  ArrayRef<int64_t> perm = transpose.getPermutation();
  int64_t rank = perm.size();
  for (int64_t i = 0; i + 2 < rank; ++i)
    if (perm[i] != i)
      return nullptr;
  if (rank < 2 || perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2)
    return nullptr;
  if (usedBetween(transpose.getInput(), transpose, op))
    return nullptr;
  return transpose;
}

struct EstLinalgToRuntimeCalls
    : public mlir::est::impl::EstLinalgToRuntimeCallsBase<
          EstLinalgToRuntimeCalls> {
  using Base::Base;
  void runOnOperation() override;
};

/// The kernel's name for the device: "estc_cuda_matmul_f32" for
/// "estc_matmul_f32" on CUDA.
std::string kernelName(StringRef cpuName, bool cuda) {
  if (!cuda)
    return cpuName.str();
  return ("estc_cuda_" + cpuName.drop_front(StringRef("estc_").size())).str();
}

/// Whether a convolution of an `in`-sized spatial dimension with a window
/// of `window` taps (dilation applied), stride `stride` and `pad` leading
/// zeros, producing `out` positions, is one cuDNN computes with `pad` zeros
/// on both sides: the same output size, so every window it reads lies
/// within `in + 2 * pad`. Dynamic sizes: not known to be.
bool symmetricPadding(int64_t in, int64_t window, int64_t dilation,
                      int64_t stride, int64_t pad, int64_t out) {
  if (ShapedType::isDynamic(in) || ShapedType::isDynamic(window) ||
      ShapedType::isDynamic(out) || stride <= 0)
    return false;
  int64_t effective = (window - 1) * dilation + 1;
  int64_t extent = in + 2 * pad - effective;
  return extent >= 0 && extent / stride + 1 == out;
}

/// The same for the two spatial dimensions (1 and 2) of NHWC `input` and
/// `output` and HWxx `filter` buffers.
bool symmetricPadding(Value input, Value filter, Value output,
                      ArrayRef<int64_t> conv) {
  auto in = cast<MemRefType>(input.getType()).getShape();
  auto k = cast<MemRefType>(filter.getType()).getShape();
  auto out = cast<MemRefType>(output.getType()).getShape();
  // conv: [sh, sw, dh, dw, pad_top, pad_left]
  return symmetricPadding(in[1], k[0], conv[2], conv[0], conv[4], out[1]) &&
         symmetricPadding(in[2], k[1], conv[3], conv[1], conv[5], out[2]);
}

/// `buffer`, or, when it is (a view of) a constant global and the kernel
/// runs on a GPU, a copy of it in a temporary the memplan stage places in
/// the arena (device memory; the copy becomes a kernel that reads the
/// constant from the kernel's own module).
Value deviceReadable(OpBuilder &b, Location loc, Value buffer, bool cuda) {
  Value root = buffer;
  while (auto view = root.getDefiningOp<ViewLikeOpInterface>())
    root = view.getViewSource();
  if (!cuda || !root.getDefiningOp<memref::GetGlobalOp>())
    return buffer;
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<Value> dynamicSizes;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      dynamicSizes.push_back(memref::DimOp::create(b, loc, buffer, i));
  Value copy = memref::AllocOp::create(
      b, loc, MemRefType::get(type.getShape(), type.getElementType()),
      dynamicSizes);
  memref::CopyOp::create(b, loc, buffer, copy);
  return copy;
}

/// Emits the kernel call writing `output`: drops a zero fill before `op`,
/// or computes into a temporary and adds it to the initial value.
void emitKernelCall(OpBuilder &b, Operation *op, ModuleOp module,
                    StringRef kernel, ArrayRef<Value> inputs, Value output,
                    int64_t rank, ArrayRef<int64_t> scalars) {
  Location loc = op->getLoc();
  b.setInsertionPoint(op);
  bool cuda = kernel.starts_with("estc_cuda_");
  Value target = output;
  bool accumulate = false;
  if (Operation *fill = findZeroInit(op, output)) {
    fill->erase();
  } else {
    auto type = cast<MemRefType>(output.getType());
    SmallVector<Value> dynamicSizes;
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (type.isDynamicDim(i))
        dynamicSizes.push_back(memref::DimOp::create(b, loc, output, i));
    target = memref::AllocOp::create(
        b, loc, MemRefType::get(type.getShape(), type.getElementType()),
        dynamicSizes);
    accumulate = true;
  }
  SmallVector<Value> args;
  SmallVector<Type> argTypes;
  SmallVector<Value> buffers;
  for (Value input : inputs)
    buffers.push_back(deviceReadable(b, loc, input, cuda));
  buffers.push_back(target);
  for (Value buffer : buffers) {
    args.push_back(asKernelArg(b, loc, buffer, rank));
    argTypes.push_back(args.back().getType());
  }
  for (int64_t scalar : scalars)
    args.push_back(arith::ConstantIntOp::create(b, loc, scalar, 64));
  FlatSymbolRefAttr callee =
      declareKernel(module, kernel, argTypes, scalars.size());
  func::CallOp::create(b, loc, callee, TypeRange(), args);
  if (accumulate) {
    auto type = cast<MemRefType>(output.getType());
    AffineMap identity = b.getMultiDimIdentityMap(type.getRank());
    SmallVector<utils::IteratorType> iterators(type.getRank(),
                                               utils::IteratorType::parallel);
    bool isFloat = isa<FloatType>(type.getElementType());
    linalg::GenericOp::create(
        b, loc, TypeRange(), ValueRange{target}, ValueRange{output},
        ArrayRef<AffineMap>{identity, identity}, iterators,
        [&](OpBuilder &nb, Location nloc, ValueRange values) {
          Value sum =
              isFloat ? arith::AddFOp::create(nb, nloc, values[1], values[0])
                            .getResult()
                      : arith::AddIOp::create(nb, nloc, values[1], values[0])
                            .getResult();
          linalg::YieldOp::create(nb, nloc, sum);
        });
  }
  op->erase();
}

/// linalg.matmul / batch_matmul -> estc_matmul_<type>.
LogicalResult rewriteMatmul(linalg::LinalgOp op, ModuleOp module, bool cuda) {
  Type element = getElementTypeOrSelf(op->getOperand(0).getType());
  if (!op.hasPureBufferSemantics() ||
      llvm::any_of(op->getOperands(), [&](Value v) {
        return getElementTypeOrSelf(v.getType()) != element;
      }))
    return failure();
  StringRef kernel;
  if (element.isF32())
    kernel = "estc_matmul_f32";
  else if (element.isF64())
    kernel = "estc_matmul_f64";
  else
    return failure();

  // Which operands are transposed, from the indexing maps.
  bool batched = isa<linalg::BatchMatmulOp>(op);
  MLIRContext *ctx = op->getContext();
  unsigned numDims = batched ? 4 : 3;
  auto expr = [&](unsigned d) { return getAffineDimExpr(d, ctx); };
  auto map = [&](unsigned r, unsigned c) {
    SmallVector<AffineExpr> results;
    if (batched)
      results.push_back(expr(0));
    results.push_back(expr(r + (batched ? 1 : 0)));
    results.push_back(expr(c + (batched ? 1 : 0)));
    return AffineMap::get(numDims, 0, results, ctx);
  };
  // Loop dims: m = 0, n = 1, k = 2 (after the batch dim).
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (maps.size() != 3 || maps[2] != map(0, 1))
    return failure();
  int64_t transposeA, transposeB;
  if (maps[0] == map(0, 2))
    transposeA = 0;
  else if (maps[0] == map(2, 0))
    transposeA = 1;
  else
    return failure();
  if (maps[1] == map(2, 1))
    transposeB = 0;
  else if (maps[1] == map(1, 2))
    transposeB = 1;
  else
    return failure();
  // Integer arithmetic attributes (cast = unsigned...) are not f32/f64.

  Value a = op.getDpsInputOperand(0)->get();
  Value b = op.getDpsInputOperand(1)->get();
  SmallVector<Operation *> deadTransposes;
  if (linalg::TransposeOp t = transposeFeeding(a, op)) {
    a = t.getInput();
    transposeA = 1 - transposeA;
    deadTransposes.push_back(t);
  }
  if (linalg::TransposeOp t = transposeFeeding(b, op)) {
    b = t.getInput();
    transposeB = 1 - transposeB;
    deadTransposes.push_back(t);
  }
  Value c = op.getDpsInitOperand(0)->get();
  OpBuilder builder(op);
  emitKernelCall(builder, op, module, kernelName(kernel, cuda), {a, b}, c, 3,
                 {transposeA, transposeB});
  for (Operation *t : deadTransposes) {
    Value init = cast<linalg::TransposeOp>(t).getInit();
    t->erase();
    if (init.use_empty())
      init.getDefiningOp()->erase();
  }
  return success();
}

/// Whether two sizes are equal: the same constant or value, or the same
/// dimension of the same buffer.
bool sameSize(OpFoldResult a, OpFoldResult b) {
  if (isEqualConstantIntOrValue(a, b))
    return true;
  auto dimA = dyn_cast_if_present<Value>(a);
  auto dimB = dyn_cast_if_present<Value>(b);
  if (!dimA || !dimB)
    return false;
  auto opA = dimA.getDefiningOp<memref::DimOp>();
  auto opB = dimB.getDefiningOp<memref::DimOp>();
  return opA && opB && opA.getSource() == opB.getSource() &&
         isEqualConstantIntOrValue(opA.getIndex(), opB.getIndex());
}

/// A bufferized zero tensor.pad: `padded` is an alloc written by a zero
/// fill (before `conv`) and, through one subview at static offsets
/// [0, top, left, 0] with unit strides, by the input.
struct ZeroPad {
  Operation *fill;
  memref::SubViewOp interior;
  int64_t top, left;
};

std::optional<ZeroPad> matchZeroPad(Value padded, Operation *conv) {
  auto alloc = padded.getDefiningOp<memref::AllocOp>();
  if (!alloc || alloc->getBlock() != conv->getBlock())
    return std::nullopt;
  Operation *fill = nullptr;
  memref::SubViewOp interior;
  for (Operation *user : alloc->getUsers()) {
    if (user == conv)
      continue;
    if (!fill && isZeroFill(user, padded))
      fill = user;
    else if (auto subview = dyn_cast<memref::SubViewOp>(user);
             subview && !interior)
      interior = subview;
    else
      return std::nullopt;
  }
  if (!fill || !interior || !fill->isBeforeInBlock(conv))
    return std::nullopt;
  SmallVector<int64_t> offsets(interior.getStaticOffsets());
  if (offsets.size() != 4 || ShapedType::isDynamic(offsets[1]) ||
      ShapedType::isDynamic(offsets[2]) || offsets[0] != 0 || offsets[3] != 0 ||
      !interior.hasUnitStride())
    return std::nullopt;
  SmallVector<OpFoldResult> allocSizes = alloc.getMixedSizes();
  SmallVector<OpFoldResult> interiorSizes = interior.getMixedSizes();
  for (unsigned i : {0u, 3u})
    if (!sameSize(allocSizes[i], interiorSizes[i]))
      return std::nullopt;
  return ZeroPad{fill, interior, offsets[1], offsets[2]};
}

/// The unpadded interior of a bufferized zero tensor.pad (matchZeroPad),
/// with the pads; erases the fill (and the copy, when the interior is read
/// from its source).
std::optional<std::tuple<Value, int64_t, int64_t>>
foldZeroPad(Value padded, Operation *conv) {
  std::optional<ZeroPad> pad = matchZeroPad(padded, conv);
  if (!pad)
    return std::nullopt;
  memref::SubViewOp interior = pad->interior;
  Value input = interior.getResult();
  // A copy of the input into the interior: read the input itself.
  if (interior->hasOneUse()) {
    auto copy = dyn_cast<memref::CopyOp>(*interior->getUsers().begin());
    if (copy && copy.getTarget() == input &&
        copy->getBlock() == conv->getBlock() &&
        !usedBetween(copy.getSource(), copy, conv)) {
      input = copy.getSource();
      copy->erase();
      interior->erase();
    }
  }
  pad->fill->erase();
  return std::make_tuple(input, pad->top, pad->left);
}

/// The interior and pads foldZeroPad would fold `padded` to (nothing is
/// erased).
std::optional<std::tuple<Value, int64_t, int64_t>>
peekZeroPad(Value padded, Operation *conv) {
  std::optional<ZeroPad> pad = matchZeroPad(padded, conv);
  if (!pad)
    return std::nullopt;
  return std::make_tuple(pad->interior.getResult(), pad->top, pad->left);
}

/// linalg.conv_2d_nhwc_hwcf (f32) -> estc_conv2d_nhwc_hwio_f32.
LogicalResult rewriteConv(linalg::Conv2DNhwcHwcfOp conv, ModuleOp module,
                          bool cuda) {
  if (!conv.hasPureBufferSemantics() ||
      llvm::any_of(conv->getOperands(), [](Value v) {
        return !getElementTypeOrSelf(v.getType()).isF32();
      }))
    return failure();
  auto strides = llvm::to_vector(conv.getStrides().getValues<int64_t>());
  auto dilations = llvm::to_vector(conv.getDilations().getValues<int64_t>());
  Value input = conv.getInputs()[0];
  if (cuda) {
    // cuDNN pads both sides alike: a convolution padded otherwise stays a
    // loop nest.
    Value interior = input;
    int64_t top = 0, left = 0;
    if (auto pad = peekZeroPad(input, conv))
      std::tie(interior, top, left) = *pad;
    if (!symmetricPadding(
            interior, conv.getInputs()[1], conv.getOutputs()[0],
            {strides[0], strides[1], dilations[0], dilations[1], top, left}))
      return failure();
  }
  int64_t padTop = 0, padLeft = 0;
  Value padded = input;
  if (auto folded = foldZeroPad(input, conv))
    std::tie(input, padTop, padLeft) = *folded;
  OpBuilder b(conv);
  Value output = conv.getOutputs()[0];
  emitKernelCall(
      b, conv, module, kernelName("estc_conv2d_nhwc_hwio_f32", cuda),
      {input, conv.getInputs()[1]}, output, 4,
      {strides[0], strides[1], dilations[0], dilations[1], padTop, padLeft});
  if (padded != input && padded.use_empty())
    padded.getDefiningOp()->erase();
  return success();
}

/// A bufferized conv backprop generic of convert-est-to-linalg -> its
/// kernel. The generic reads the windowed operand (grad_output for the
/// input gradient, the input for the filter gradient) with memref.load in
/// its body; its one input operand is the filter / grad_output and its
/// output the gradient. "estc.conv" holds [sh, sw, dh, dw, pad_top,
/// pad_left].
LogicalResult rewriteConvBackprop(linalg::GenericOp generic, ModuleOp module,
                                  bool cuda) {
  StringRef kernel = *generic.getLibraryCall();
  bool depthwise = kernel.starts_with("estc_depthwise_conv2d");
  // The depthwise forward takes (input, filter, output): its streamed
  // operand is the filter and it gathers the input, as the input gradient
  // streams the filter and gathers grad_output.
  bool forward = kernel == "estc_depthwise_conv2d_f32";
  bool input = forward || kernel == "estc_conv2d_backprop_input_f32" ||
               kernel == "estc_depthwise_conv2d_backprop_input_f32";
  if (!input && kernel != "estc_conv2d_backprop_filter_f32" &&
      kernel != "estc_depthwise_conv2d_backprop_filter_f32")
    return generic.emitOpError("unknown runtime kernel '") << kernel << "'";
  auto scalars = generic->getAttrOfType<DenseI64ArrayAttr>("estc.conv");
  SmallVector<memref::LoadOp> loads;
  generic.getRegion().walk([&](memref::LoadOp load) { loads.push_back(load); });
  if (depthwise && generic.hasPureBufferSemantics() && loads.empty()) {
    // The gathered operand folded away (a splat constant, as the gradient
    // of reduce_sum(y)): no buffer to hand a kernel; the loop nest is
    // correct.
    generic.removeLibraryCallAttr();
    generic->removeAttr("estc.conv");
    return success();
  }
  if (!generic.hasPureBufferSemantics() || !scalars || scalars.size() != 6 ||
      generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      loads.size() != 1)
    return generic.emitOpError("is not a bufferized conv backprop of "
                               "convert-est-to-linalg");
  Value windowed = loads.front().getMemRef();
  Value operand = generic.getDpsInputs()[0];
  // Kernel argument order: (filter, grad_output, grad_input) and
  // (input, grad_output, grad_filter).
  SmallVector<Value> inputs = input && !forward
                                  ? SmallVector<Value>{operand, windowed}
                                  : SmallVector<Value>{windowed, operand};
  Value gradient = generic.getDpsInits()[0];
  if (cuda && depthwise) {
    // No CUDA depthwise kernel: a loop nest, which the gpu stage makes a
    // kernel.
    generic.removeLibraryCallAttr();
    generic->removeAttr("estc.conv");
    return success();
  }
  if (cuda) {
    // (input, filter, output) of the forward convolution.
    Value forwardInput = input ? gradient : windowed;
    Value filter = input ? operand : gradient;
    Value gradOutput = input ? windowed : operand;
    if (!symmetricPadding(forwardInput, filter, gradOutput,
                          scalars.asArrayRef())) {
      // A loop nest, which the gpu stage makes a kernel.
      generic.removeLibraryCallAttr();
      generic->removeAttr("estc.conv");
      return success();
    }
  }
  OpBuilder b(generic);
  emitKernelCall(b, generic, module, kernelName(kernel, cuda), inputs, gradient,
                 4, scalars.asArrayRef());
  return success();
}

void EstLinalgToRuntimeCalls::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<Operation *> candidates;
  module.walk([&](Operation *op) {
    if (isa<linalg::MatmulOp, linalg::BatchMatmulOp, linalg::Conv2DNhwcHwcfOp>(
            op))
      candidates.push_back(op);
  });
  module.walk([&](linalg::GenericOp generic) {
    if (generic.getLibraryCall())
      candidates.push_back(generic);
  });
  if (device != "cpu" && device != "cuda") {
    module.emitError("est-linalg-to-runtime-calls: device=")
        << device << ": unknown device (cpu or cuda)";
    return signalPassFailure();
  }
  bool cuda = device == "cuda";
  for (Operation *op : candidates) {
    if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
      if (failed(rewriteConvBackprop(generic, module, cuda)))
        return signalPassFailure();
    } else if (auto conv = dyn_cast<linalg::Conv2DNhwcHwcfOp>(op))
      (void)rewriteConv(conv, module, cuda);
    else
      (void)rewriteMatmul(cast<linalg::LinalgOp>(op), module, cuda);
  }
  // Buffers that are only zero-filled any more (their readers were copies
  // into kernel outputs) are dead.
  SmallVector<memref::AllocOp> allocs;
  module.walk([&](memref::AllocOp alloc) { allocs.push_back(alloc); });
  for (memref::AllocOp alloc : allocs) {
    if (!llvm::all_of(alloc->getUsers(), [&](Operation *user) {
          return isZeroFill(user, alloc.getResult());
        }))
      continue;
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      user->erase();
    alloc.erase();
  }
}

} // namespace
