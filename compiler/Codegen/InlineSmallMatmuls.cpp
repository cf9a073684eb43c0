//===- InlineSmallMatmuls.cpp - est-inline-small-matmuls ------------------===//
//
// After est-fuse-epilogues: an f32 matmul kernel call (`estc_matmul_f32`,
// `estc_matmul_bias_act_f32`) whose product is small in its static
// dimensions becomes vector code in place, so a net of tiny layers (the
// iris-sized 4-10-10-3) makes no runtime call, packs no panel and pads no
// block per matmul. C = act(op(A) x op(B) + bias) is computed in one of two
// forms, both on rows of C's N columns (N static) held as vectors of 8
// lanes and one vector for the rest (masked when the rest is 3, 5, 6 or 7):
//
//  - rows: K static. op(B)'s K rows are vectors (loaded in the loop, or
//    gathered once before it when B is transposed); for each of C's M rows
//    (M dynamic or static) acc = sum_k broadcast(a[i,k]) * b_k, then the
//    epilogue, then the stores.
//  - columns: M static, K dynamic (a weight gradient summing over the
//    batch): blocks of C's rows whose accumulators fit in registers, each
//    carried through a loop over k (one row of B, a broadcast of A per row
//    of the block), the epilogue and the stores after it.
//
// Every sum runs over k in order, a multiply and an add at a time (no FMA,
// no contraction: the same bits on every target, as est-approximate-math's
// expansions): the rows form starts from the first product, the columns
// form from zero, which changes only the sign of an exact zero. With the
// runtime's kernel (FMA, its own blocking) they agree within float32
// rounding. The epilogue is the kernel's: bias added along the columns,
// then relu as arith.maximumf with 0 and relu6 as arith.minimumf with 6.
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

  /// A's dimension that is the product's depth K.
  unsigned depthDim() const { return transposeA ? 0 : 1; }
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
  std::optional<int64_t> act = fused ? constantInt(call.getOperand(flags + 2))
                                     : std::optional<int64_t>(0);
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
  int64_t kSize = a.getDimSize(m.depthDim());
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

/// A row of C's N columns as vectors of 8 lanes, then one vector for the
/// rest: exact when the rest is 1, 2 or 4 columns, else the next power of
/// two with its last lanes masked off (N = 10: 8 + 2; N = 3: 4 lanes, 3 of
/// them used). Power-of-two vectors stay in registers, also as loop values
/// (a <10 x float> carried by a loop is rebuilt lane by lane at every
/// iteration); a masked one costs one masked load (the lanes past N read
/// as zero, never from memory) and its stores are split into exact parts.
using Row = SmallVector<Value, 4>;

struct Chunk {
  int64_t first;   // C's first column in it
  int64_t used;    // columns it holds
  VectorType type; // its lanes: used, or the next power of two
  bool masked() const { return used != type.getNumElements(); }
};

/// Rows of B whose narrower last chunk the rows form loads before its loop.
constexpr int64_t kHoistedTails = 10;

/// Accumulators the columns form keeps in registers (of AVX2's 16, the
/// rest for B's row and the broadcasts).
constexpr int64_t kColumnAccumulators = 12;

/// Emits the kernel's arithmetic on Rows.
struct Emitter {
  OpBuilder &b;
  Location loc;
  const MatmulCall &m;
  SmallVector<Chunk> chunks;

  Emitter(OpBuilder &b, Location loc, const MatmulCall &m, int64_t n)
      : b(b), loc(loc), m(m) {
    int64_t first = 0;
    for (; first + 8 <= n; first += 8)
      chunks.push_back({first, 8, VectorType::get({8}, b.getF32Type())});
    if (int64_t rest = n - first) {
      int64_t lanes = llvm::PowerOf2Ceil(rest);
      chunks.push_back({first, rest, VectorType::get({lanes}, b.getF32Type())});
    }
  }

  Value index(int64_t i) {
    return arith::ConstantIndexOp::create(b, loc, i).getResult();
  }
  Row splat(float value) {
    Row row;
    for (const Chunk &chunk : chunks)
      row.push_back(arith::ConstantOp::create(
          b, loc,
          DenseElementsAttr::get(chunk.type, b.getF32FloatAttr(value))));
    return row;
  }
  /// a[i, k] of op(A).
  Value loadA(Value i, Value k) {
    SmallVector<Value> at =
        m.transposeA ? SmallVector<Value>{k, i} : SmallVector<Value>{i, k};
    return memref::LoadOp::create(b, loc, m.a, at);
  }
  /// Row `i` of a contiguous 2-D buffer, or all of a 1-D one (i null);
  /// without its last `dropLast` chunks.
  Row loadRow(Value buffer, Value i, size_t dropLast = 0) {
    Row row;
    for (const Chunk &chunk : ArrayRef(chunks).drop_back(dropLast)) {
      SmallVector<Value> at;
      if (i)
        at.push_back(i);
      at.push_back(index(chunk.first));
      if (!chunk.masked()) {
        row.push_back(vector::LoadOp::create(b, loc, chunk.type, buffer, at));
        continue;
      }
      int64_t lanes = chunk.type.getNumElements();
      SmallVector<bool> bits(lanes, false);
      std::fill_n(bits.begin(), chunk.used, true);
      auto maskType = VectorType::get({lanes}, b.getI1Type());
      Value mask = arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(maskType, ArrayRef<bool>(bits)));
      Value zeros = arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(chunk.type, b.getF32FloatAttr(0.0f)));
      row.push_back(vector::MaskedLoadOp::create(b, loc, chunk.type, buffer, at,
                                                 mask, zeros));
    }
    return row;
  }
  /// Row k of op(B) gathered from a transposed B (column k of B); lanes
  /// past N are zero.
  Row gatherBRow(int64_t k) {
    Row row;
    Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
    for (const Chunk &chunk : chunks) {
      SmallVector<Value> elements;
      for (int64_t n = 0; n < chunk.type.getNumElements(); ++n)
        elements.push_back(
            n < chunk.used
                ? memref::LoadOp::create(
                      b, loc, m.b, ValueRange{index(chunk.first + n), index(k)})
                      .getResult()
                : zero);
      row.push_back(
          vector::FromElementsOp::create(b, loc, chunk.type, elements));
    }
    return row;
  }
  /// acc + broadcast(a) * row (a multiply and an add), or the product alone
  /// when `acc` is empty (the first term).
  Row multiplyAdd(ValueRange acc, Value a, const Row &row) {
    Row sum;
    for (auto [j, chunk] : llvm::enumerate(chunks)) {
      Value splat = vector::BroadcastOp::create(b, loc, chunk.type, a);
      Value product = arith::MulFOp::create(b, loc, splat, row[j]);
      sum.push_back(acc.empty()
                        ? product
                        : arith::AddFOp::create(b, loc, acc[j], product));
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
  /// Stores a Row as row `i` of C: a masked chunk's used lanes in exact
  /// power-of-two parts (3 = 2 + 1).
  void storeRow(const Row &row, Value i) {
    for (auto [j, chunk] : llvm::enumerate(chunks)) {
      if (!chunk.masked()) {
        vector::StoreOp::create(b, loc, row[j], m.c,
                                ValueRange{i, index(chunk.first)});
        continue;
      }
      for (int64_t at = 0, width = chunk.type.getNumElements(); at < chunk.used;
           width /= 2) {
        if (at + width > chunk.used)
          continue;
        Value part = vector::ExtractStridedSliceOp::create(
            b, loc, row[j], ArrayRef<int64_t>{at}, ArrayRef<int64_t>{width},
            ArrayRef<int64_t>{1});
        vector::StoreOp::create(b, loc, part, m.c,
                                ValueRange{i, index(chunk.first + at)});
        at += width;
      }
    }
  }
  Row loadBias() { return m.bias ? loadRow(m.bias, nullptr) : Row(); }
  Value dim(Value buffer, int64_t d) {
    return memref::DimOp::create(b, loc, buffer, d);
  }
};

/// C's rows one at a time: sum_k broadcast(a[i, k]) * b_k.
void emitRows(Emitter &e, int64_t kSize) {
  OpBuilder &b = e.b;
  const MatmulCall &m = e.m;
  // op(B)'s rows before the loop: all of them when B is transposed
  // (gathered), else their last, narrower chunk when K of them fit in
  // registers (a full 8-lane chunk is loaded by its multiply in the loop;
  // a narrower one would be a load of its own at every row).
  SmallVector<Row> before;
  bool tail = !m.transposeB && e.chunks.back().type.getNumElements() < 8 &&
              kSize <= kHoistedTails;
  for (int64_t k = 0; k < kSize && (m.transposeB || tail); ++k)
    before.push_back(m.transposeB ? e.gatherBRow(k)
                                  : e.loadRow(m.b, e.index(k)));
  Row bias = e.loadBias();
  Value rows = e.dim(m.c, 0);
  auto loop = scf::ForOp::create(b, e.loc, e.index(0), rows, e.index(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value i = loop.getInductionVar();
  Row acc = kSize == 0 ? e.splat(0.0f) : Row();
  for (int64_t k = 0; k < kSize; ++k) {
    Row row;
    if (m.transposeB) {
      row = before[k];
    } else {
      row = e.loadRow(m.b, e.index(k), /*dropLast=*/tail ? 1 : 0);
      if (tail)
        row.push_back(before[k].back());
    }
    acc = e.multiplyAdd(acc, e.loadA(i, e.index(k)), row);
  }
  e.storeRow(e.epilogue(acc, bias), i);
}

/// C's rows [first, first + count) accumulated over k: one loop, their
/// accumulators carried in registers.
void emitColumnBlock(Emitter &e, int64_t first, int64_t count,
                     const Row &bias) {
  OpBuilder &b = e.b;
  const MatmulCall &m = e.m;
  size_t width = e.chunks.size();
  Value depth = e.dim(m.a, m.depthDim());
  Row zero = e.splat(0.0f);
  SmallVector<Value> inits;
  for (int64_t i = 0; i < count; ++i)
    llvm::append_range(inits, zero);
  auto loop =
      scf::ForOp::create(b, e.loc, e.index(0), depth, e.index(1), inits);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value k = loop.getInductionVar();
    Row row = e.loadRow(m.b, k);
    SmallVector<Value> accs;
    for (int64_t i = 0; i < count; ++i)
      llvm::append_range(
          accs, e.multiplyAdd(loop.getRegionIterArgs().slice(i * width, width),
                              e.loadA(e.index(first + i), k), row));
    scf::YieldOp::create(b, e.loc, accs);
  }
  for (int64_t i = 0; i < count; ++i)
    e.storeRow(e.epilogue(loop.getResults().slice(i * width, width), bias),
               e.index(first + i));
}

/// C's M rows in blocks whose accumulators fit in registers, each block a
/// pass over k (B's rows read once per block).
void emitColumns(Emitter &e, int64_t mSize) {
  int64_t width = static_cast<int64_t>(e.chunks.size());
  int64_t block = std::max<int64_t>(1, kColumnAccumulators / width);
  int64_t blocks = (mSize + block - 1) / block;
  Row bias = e.loadBias();
  for (int64_t first = 0, j = 0; j < blocks; ++j) {
    // Blocks of equal size (10 rows: 5 + 5, not 6 + 4).
    int64_t count = (mSize - first) / (blocks - j);
    emitColumnBlock(e, first, count, bias);
    first += count;
  }
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
        emitRows(e, cast<MemRefType>(m.a.getType()).getDimSize(m.depthDim()));
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
