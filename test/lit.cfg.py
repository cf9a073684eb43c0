# The estc lit suite: every *.mlir / *.test / *.pbtxt test under test/ except
# the unit tests. Tools come from the build tree; FileCheck and not from
# Debian's LLVM 22.
import os
import lit.formats

config.name = "estc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["unit", "Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.estc_obj_root, "test")

config.environment["PATH"] = os.pathsep.join(
    [config.estc_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
config.substitutions.append(("%shared_data", config.shared_data_dir))
# bench/model_bench is built only where libtorch is installed.
if os.path.exists(os.path.join(config.estc_tools_dir, "model_bench")):
    config.available_features.add("model_bench")
# The CUDA target's tests need the toolkit's ptxas (ESTC_CUDA_TOOLKIT, found
# by CMake); without it they are reported UNSUPPORTED.
if config.cuda_toolkit:
    config.available_features.add("cuda-toolkit")
    config.environment["ESTC_CUDA_PATH"] = config.cuda_toolkit
    config.substitutions.append(("%ptxas", os.path.join(config.cuda_toolkit, "bin", "ptxas")))
