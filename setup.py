"""`pip install .`: builds the module _dnncast with CMake (the forecast library only: neither libtorch nor SQLite,
-DDNNCAST_WITH_TORCH=OFF) and installs python/dnncast with data/predictors and data/hardware inside it, where the
package looks first (dnncast._data_folder). Metadata: pyproject.toml."""
import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(build_ext):
    """The module as CMake builds it for this interpreter (python/CMakeLists.txt), copied where setuptools wants it."""

    def build_extension(self, ext):
        build_dir = os.path.abspath(os.path.join(self.build_temp, "cmake"))
        os.makedirs(build_dir, exist_ok=True)
        jobs = str(os.cpu_count() or 1)
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                               "-DDNNCAST_WITH_TORCH=OFF", "-DDNNCAST_BUILD_TESTS=OFF", "-DDNNCAST_BUILD_BENCH=OFF",
                               "-DDNNCAST_BUILD_PYTHON=ON", "-DDNNCAST_PYTHON=" + sys.executable],
                              stdout=subprocess.DEVNULL)
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "_dnncast", "-j", jobs])
        built = glob.glob(os.path.join(build_dir, "python", "dnncast", "_dnncast*.so"))
        if not built:
            raise RuntimeError("CMake built no _dnncast module under " + build_dir)
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built[0], target)


class WithData(build_py):
    """python/dnncast plus data/predictors and data/hardware as dnncast/data/."""

    def run(self):
        super().run()
        for name in ("predictors", "hardware"):
            target = os.path.join(self.build_lib, "dnncast", "data", name)
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(os.path.join(ROOT, "data", name), target)


setup(
    packages=["dnncast"],
    package_dir={"": "python"},
    ext_modules=[Extension("dnncast._dnncast", sources=[])],
    cmdclass={"build_ext": CMakeExtension, "build_py": WithData},
    zip_safe=False,
)
