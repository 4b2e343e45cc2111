"""Builds the ragform Python package: the pure-Python layer (ragform/) and the C++ extension
module _ragform, compiled by the project's CMake (docs/python.md "Installing").

By default CMake configures a fresh Release tree in python/build (native CPU) and builds only the
_ragform target. With RAGFORM_CMAKE_BUILD_DIR naming an already configured build tree (CI passes
build/ci), _ragform is built there, reusing the tree's objects of the library layers.
Only setuptools is needed (scikit-build is not in Debian bookworm).
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        if not (ROOT / "CMakeLists.txt").is_file():
            sys.exit("ragform: setup.py must run from a ragform checkout (python/ beside src/)")
        tree = os.environ.get("RAGFORM_CMAKE_BUILD_DIR", "")
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        # The interpreter that installs the package decides the module's ABI tag.
        # (a venv's base interpreter: its headers and ABI; stable when the venv is removed).
        python = f"-DPython_EXECUTABLE={getattr(sys, '_base_executable', sys.executable)}"
        if tree:
            build = Path(tree)
            if not build.is_absolute():
                build = ROOT / build
            if not (build / "CMakeCache.txt").is_file():
                sys.exit(f"ragform: RAGFORM_CMAKE_BUILD_DIR={tree} is not a configured CMake tree")
            subprocess.check_call(["cmake", python, "-DRAGFORM_BUILD_PYTHON=ON", str(build)])
        else:
            build = HERE / "build" / "cmake"
            args = ["cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                    "-DRAGFORM_NATIVE=ON", "-DRAGFORM_BUILD_TESTS=OFF",
                    "-DRAGFORM_BUILD_BENCH=OFF", "-DRAGFORM_BUILD_PYTHON=ON", python]
            # pybind11's CMake files from its Python package (pip's isolated build environment,
            # pyproject.toml) when there is no system-wide pybind11-dev.
            try:
                import pybind11
                if Path(pybind11.get_cmake_dir()).is_dir():
                    args.append(f"-Dpybind11_DIR={pybind11.get_cmake_dir()}")
            except ImportError:
                pass
            subprocess.check_call(args)
        subprocess.check_call(["cmake", "--build", str(build), "--target", "_ragform",
                               "-j", jobs])
        built = list((build / "python").glob("_ragform*.so"))
        if len(built) != 1:
            sys.exit(f"ragform: expected one _ragform*.so in {build / 'python'}, found {built}")
        dest = Path(self.get_ext_fullpath(ext.name))
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], dest)


setup(
    name="ragform",
    version="0.1.0",
    description="ragform's GGUF engine and the SURE, C-NORM and SpotlightRAG pipelines",
    packages=["ragform", "ragform.readers"],
    ext_modules=[CMakeExtension("ragform._ragform")],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
    install_requires=["numpy"],
    extras_require={"pandas": ["pandas"], "progress": ["tqdm"]},
    zip_safe=False,
)
