//===- EstAttrs.td - est dialect attributes ----------------*- tablegen -*-===//
#ifndef EST_ATTRS_TD
#define EST_ATTRS_TD

include "dialects/Est/IR/EstBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

class Est_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Est_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Est_InitializerAttr : Est_Attr<"Initializer", "init"> {
  let summary = "How a variable is initialized";
  let description = [{
    The name of an initializer (`zeros`, `ones`, `constant`,
    `glorot_uniform`, `random_normal`, ...) and its parameters:

    ```mlir
    #est.init<"glorot_uniform", {seed = 7 : i64}>
    #est.init<"zeros">
    ```
  }];
  let parameters = (ins StringRefParameter<"initializer name">:$kind,
                        OptionalParameter<"::mlir::DictionaryAttr">:$params);
  let assemblyFormat = "`<` $kind (`,` $params^)? `>`";
}

#endif // EST_ATTRS_TD
