//===- InlineSmallMatmuls.cpp - est-inline-small-matmuls ------------------===//
//
// After est-fuse-epilogues: an f32 matmul kernel call (`estc_matmul_f32`,
// `estc_matmul_bias_act_f32`) whose product is small in its static
// dimensions becomes vector code in place, so a net of tiny layers (the
// iris-sized 4-10-10-3) makes no runtime call, packs no panel and pads no
// block per matmul. C = act(op(A) x op(B) + bias) is computed in one of two
// forms, both vectors of C's N columns (N static):
//
//  - rows: K static. op(B)'s K rows are vectors (loaded in the loop, or
//    gathered once before it when B is transposed); for each of C's M rows
//    (M dynamic or static) acc = sum_k broadcast(a[i,k]) * b_k, then the
//    epilogue, then one store.
//  - columns: M static, K dynamic (a weight gradient summing over the
//    batch): M accumulators carried through a loop over k, each step one
//    row of B and M broadcasts of A's column; the epilogue and the stores
//    after the loop.
//
// Both sum every element in the order k = 0, 1, ..., K-1 from zero, with a
// multiply and an add (no FMA, no contraction: the same bits on every
// target, as est-approximate-math's expansions), so the two forms agree bit
// for bit with each other and with the JIT and AOT; with the runtime's
// kernel (FMA, its own blocking) they agree within float32 rounding.
// The epilogue is the kernel's: bias added along the columns, then relu as
// arith.maximumf with 0 and relu6 as arith.minimumf with 6 after it.
//
// What counts as small: rows when N * K <= max-row-work (and M * N * K <=
// max-static-work if M is static); columns when M * N <= max-column-work.
// Larger products stay calls: the runtime's blocked kernels use FMA and
// all of a register file; these forms hold a row or a column block.
// C's and (unless gathered) B's last dimension must be contiguous.
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen/KernelCalls.h"
#include "compiler/Codegen/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTINLINESMALLMATMULS
#include "compiler/Codegen/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;
using namespace mlir::est::kernels;

namespace {

/// A matmul kernel call's operands, as the rank-2 buffers its views view.
struct MatmulCall {
  func::CallOp call;
  Value a, b, c, bias; // bias: rank 1, or null
  bool transposeA = false, transposeB = false;
  int64_t activation = 0; // Epilogue::Activation: none, relu, relu6
};

std::optional<int64_t> constantInt(Value v) {
  APInt value;
  if (!matchPattern(v, m_ConstantInt(&value)))
    return std::nullopt;
  return value.getSExtValue();
}

/// The rank-`rank` f32 buffer a kernel argument views, or null.
Value sourceOfRank(Value arg, int64_t rank) {
  Value source = kernelArgSource(arg);
  if (!source)
    return nullptr;
  auto type = cast<MemRefType>(source.getType());
  if (type.getRank() != rank || !type.getElementType().isF32())
    return nullptr;
  return source;
}

std::optional<MatmulCall> matchMatmulCall(func::CallOp call) {
  StringRef callee = call.getCallee();
  bool fused = callee == "estc_matmul_bias_act_f32";
  if (callee != "estc_matmul_f32" && !fused)
    return std::nullopt;
  MatmulCall m;
  m.call = call;
  m.a = sourceOfRank(call.getOperand(0), 2);
  m.b = sourceOfRank(call.getOperand(1), 2);
  m.c = sourceOfRank(call.getOperand(2), 2);
  unsigned flags = 3;
  if (fused) {
    m.bias = sourceOfRank(call.getOperand(3), 1);
    flags = 4;
    if (!m.bias)
      return std::nullopt;
  }
  std::optional<int64_t> ta = constantInt(call.getOperand(flags));
  std::optional<int64_t> tb = constantInt(call.getOperand(flags + 1));
  std::optional<int64_t> act =
      fused ? constantInt(call.getOperand(flags + 2)) : std::optional<int64_t>(0);
  if (!m.a || !m.b || !m.c || !ta || !tb || !act || *act < 0 || *act > 2)
    return std::nullopt;
  m.transposeA = *ta != 0;
  m.transposeB = *tb != 0;
  m.activation = *act;
  return m;
}

/// Whether `buffer`'s last dimension has a static unit stride.
bool lastDimContiguous(Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides.empty())
    return false;
  return strides.back() == 1;
}

enum class Form { Call, Rows, Columns };

struct Limits {
  int64_t rowWork, columnWork, staticWork;
};

Form chooseForm(const MatmulCall &m, const Limits &limits) {
  auto a = cast<MemRefType>(m.a.getType());
  auto c = cast<MemRefType>(m.c.getType());
  int64_t mSize = c.getDimSize(0), nSize = c.getDimSize(1);
  int64_t kSize = a.getDimSize(m.transposeA ? 0 : 1);
  if (ShapedType::isDynamic(nSize) || nSize == 0 || !lastDimContiguous(m.c))
    return Form::Call;
  if (m.bias && !lastDimContiguous(m.bias))
    return Form::Call;
  bool bRows = !m.transposeB && lastDimContiguous(m.b);
  bool staticOk = ShapedType::isDynamic(mSize) ||
                  ShapedType::isDynamic(kSize) ||
                  mSize * nSize * kSize <= limits.staticWork;
  if (!staticOk)
    return Form::Call;
  if (!ShapedType::isDynamic(kSize) && nSize * kSize <= limits.rowWork &&
      (bRows || m.transposeB))
    return Form::Rows;
  if (!ShapedType::isDynamic(mSize) && mSize * nSize <= limits.columnWork &&
      bRows)
    return Form::Columns;
  return Form::Call;
}

/// A row of C's N columns as vectors of 8, then 4, 2 and 1 lanes (N = 10:
/// 8 + 2): power-of-two vectors that LLVM keeps in registers, also as loop
/// values (a <10 x float> carried by a loop is rebuilt lane by lane at every
/// iteration).
using Row = SmallVector<Value, 4>;

/// Emits the kernel's arithmetic on Rows.
struct Emitter {
  OpBuilder &b;
  Location loc;
  const MatmulCall &m;
  SmallVector<std::pair<int64_t, VectorType>> chunks; // (first column, type)

  Emitter(OpBuilder &b, Location loc, const MatmulCall &m, int64_t n)
      : b(b), loc(loc), m(m) {
    for (int64_t first = 0, width = 8; first < n; width /= 2)
      for (; first + width <= n; first += width)
        chunks.push_back({first, VectorType::get({width}, b.getF32Type())});
  }

  Value index(int64_t i) {
    return arith::ConstantIndexOp::create(b, loc, i).getResult();
  }
  Row splat(float value) {
    Row row;
    for (auto &[first, type] : chunks)
      row.push_back(arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(type, b.getF32FloatAttr(value))));
    return row;
  }
  /// a[i, k] of op(A).
  Value loadA(Value i, Value k) {
    SmallVector<Value> at = m.transposeA ? SmallVector<Value>{k, i}
                                         : SmallVector<Value>{i, k};
    return memref::LoadOp::create(b, loc, m.a, at);
  }
  /// Row `i` of a contiguous 2-D buffer, or all of a 1-D one (i null).
  Row loadRow(Value buffer, Value i) {
    Row row;
    for (auto &[first, type] : chunks) {
      SmallVector<Value> at;
      if (i)
        at.push_back(i);
      at.push_back(index(first));
      row.push_back(vector::LoadOp::create(b, loc, type, buffer, at));
    }
    return row;
  }
  /// Row k of op(B) gathered from a transposed B (column k of B).
  Row gatherBRow(int64_t k) {
    Row row;
    for (auto &[first, type] : chunks) {
      SmallVector<Value> elements;
      for (int64_t n = 0; n < type.getNumElements(); ++n)
        elements.push_back(memref::LoadOp::create(
            b, loc, m.b, ValueRange{index(first + n), index(k)}));
      row.push_back(vector::FromElementsOp::create(b, loc, type, elements));
    }
    return row;
  }
  /// acc + broadcast(a) * row: a multiply and an add.
  Row multiplyAdd(ValueRange acc, Value a, const Row &row) {
    Row sum;
    for (auto [j, chunk] : llvm::enumerate(chunks)) {
      Value splat = vector::BroadcastOp::create(b, loc, chunk.second, a);
      Value product = arith::MulFOp::create(b, loc, splat, row[j]);
      sum.push_back(arith::AddFOp::create(b, loc, acc[j], product));
    }
    return sum;
  }
  /// act(acc + bias), as the kernel's epilogue.
  Row epilogue(ValueRange acc, const Row &bias) {
    Row zero = m.activation >= 1 ? splat(0.0f) : Row();
    Row six = m.activation == 2 ? splat(6.0f) : Row();
    Row out;
    for (size_t j = 0; j < chunks.size(); ++j) {
      Value v = acc[j];
      if (!bias.empty())
        v = arith::AddFOp::create(b, loc, v, bias[j]);
      if (m.activation >= 1)
        v = arith::MaximumFOp::create(b, loc, v, zero[j]);
      if (m.activation == 2)
        v = arith::MinimumFOp::create(b, loc, v, six[j]);
      out.push_back(v);
    }
    return out;
  }
  void storeRow(const Row &row, Value i) {
    for (auto [j, chunk] : llvm::enumerate(chunks))
      vector::StoreOp::create(b, loc, row[j], m.c,
                              ValueRange{i, index(chunk.first)});
  }
  Row loadBias() { return m.bias ? loadRow(m.bias, nullptr) : Row(); }
  Value dim(Value buffer, int64_t d) {
    return memref::DimOp::create(b, loc, buffer, d);
  }
};

void emitRows(Emitter &e, int64_t kSize) {
  OpBuilder &b = e.b;
  const MatmulCall &m = e.m;
  SmallVector<Row> gathered;
  if (m.transposeB)
    for (int64_t k = 0; k < kSize; ++k)
      gathered.push_back(e.gatherBRow(k));
  Row bias = e.loadBias();
  Row zero = e.splat(0.0f);
  Value rows = e.dim(m.c, 0);
  auto loop = scf::ForOp::create(b, e.loc, e.index(0), rows, e.index(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value i = loop.getInductionVar();
  Row acc = zero;
  for (int64_t k = 0; k < kSize; ++k) {
    Row row = m.transposeB ? gathered[k] : e.loadRow(m.b, e.index(k));
    acc = e.multiplyAdd(acc, e.loadA(i, e.index(k)), row);
  }
  e.storeRow(e.epilogue(acc, bias), i);
}

void emitColumns(Emitter &e, int64_t mSize) {
  OpBuilder &b = e.b;
  const MatmulCall &m = e.m;
  size_t width = e.chunks.size();
  Value depth = e.dim(m.a, m.transposeA ? 0 : 1);
  Row zero = e.splat(0.0f);
  SmallVector<Value> inits;
  for (int64_t i = 0; i < mSize; ++i)
    llvm::append_range(inits, zero);
  auto loop =
      scf::ForOp::create(b, e.loc, e.index(0), depth, e.index(1), inits);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value k = loop.getInductionVar();
    Row row = e.loadRow(m.b, k);
    SmallVector<Value> accs;
    for (int64_t i = 0; i < mSize; ++i)
      llvm::append_range(
          accs, e.multiplyAdd(loop.getRegionIterArgs().slice(i * width, width),
                              e.loadA(e.index(i), k), row));
    scf::YieldOp::create(b, e.loc, accs);
  }
  Row bias = e.loadBias();
  for (int64_t i = 0; i < mSize; ++i)
    e.storeRow(e.epilogue(loop.getResults().slice(i * width, width), bias),
               e.index(i));
}

struct EstInlineSmallMatmuls
    : public mlir::est::impl::EstInlineSmallMatmulsBase<EstInlineSmallMatmuls> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Limits limits{maxRowWork, maxColumnWork, maxStaticWork};
    SmallVector<std::pair<MatmulCall, Form>> work;
    module.walk([&](func::CallOp call) {
      if (std::optional<MatmulCall> m = matchMatmulCall(call)) {
        Form form = chooseForm(*m, limits);
        if (form != Form::Call)
          work.push_back({*m, form});
      }
    });
    for (auto &[m, form] : work) {
      OpBuilder b(m.call);
      auto c = cast<MemRefType>(m.c.getType());
      Emitter e(b, m.call.getLoc(), m, c.getDimSize(1));
      if (form == Form::Rows)
        emitRows(e, cast<MemRefType>(m.a.getType())
                        .getDimSize(m.transposeA ? 0 : 1));
      else
        emitColumns(e, c.getDimSize(0));
      // The kernel argument views die with the call (the canonicalizer
      // after this pass removes them).
      m.call.erase();
    }
    // Kernels no call uses any more.
    for (func::FuncOp decl :
         llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (decl.isDeclaration() && decl.getName().starts_with("estc_matmul") &&
          SymbolTable::symbolKnownUseEmpty(decl, module))
        decl.erase();
  }
};

} // namespace
