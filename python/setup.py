# The C extension (ruda._ruda) is built by cffi from ruda/_build.py, which
# finds ruda's headers and library (see README.md).
from setuptools import setup

setup(cffi_modules=["ruda/_build.py:ffibuilder"])
