"""Build of the optional C extension (the rest of the build is in pyproject.toml).

``searchbench.data._scan`` reads TREC runs and qrels in one pass (``data/_scan.c``). It is
optional: without a C compiler or Python's headers the build skips it with a warning and
the pure numpy/pyarrow reader is used (``searchbench --version`` says which is active).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("searchbench.data._scan", ["src/searchbench/data/_scan.c"],
                             extra_compile_args=["-O2"], optional=True)])
