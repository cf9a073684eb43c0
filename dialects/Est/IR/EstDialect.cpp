//===- EstDialect.cpp - The est dialect -------------------------------===//

#include "dialects/Est/IR/EstDialect.h"
#include "dialects/Est/IR/EstInterfaces.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::est;

#include "dialects/Est/IR/EstDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Est/IR/EstAttrs.cpp.inc"

void EstDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Est/IR/EstOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Est/IR/EstAttrs.cpp.inc"
      >();
  attachGradientInterfaces(*getContext());
}

Operation *EstDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}
