"""The package's own conversion of byte lists (wasmtime-py's converts one
byte at a time): installed, and exact across its slices."""

import ctypes
import os

from wasmtime import _ffi as ffi
from wasmtime.component import _types as types

from lakesweep import _component


class _Bytes(types.ListType):
    element = types.U8()

    def __del__(self):
        pass


def test_byte_lists_cross_in_bulk_and_exactly():
    assert _component.BULK_BYTES
    lt = _Bytes.__new__(_Bytes)
    for n in (0, 1, 65_535, 65_536, 200_003):
        data = os.urandom(n)
        v = ffi.wasmtime_component_val_t()
        types.ListType.convert_to_c(lt, None, data, ctypes.pointer(v))
        assert types.ListType.convert_from_c(lt, v) == data, n
