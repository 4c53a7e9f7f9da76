"""The planner component (``lakesweep.wasm``) in wasmtime-py, no WASI.

Values cross the WIT boundary as wasmtime-py represents them: records as
objects whose attributes are the WIT field names (kebab-case), variants as
``Variant(tag, payload)``, enums as their names, ``list<u8>`` as bytes.
Every decision is the component's; this module only converts and calls.
"""

import hashlib
import os
from pathlib import Path

import wasmtime
from wasmtime import component as wc

INTERFACE = "lakesweep:planner/planner@0.2.0"


def record(**fields):
    """A WIT record from keyword arguments (``table_location`` is ``table-location``)."""
    r = wc.Record()
    for k, v in fields.items():
        setattr(r, k.replace("_", "-"), v)
    return r


def field(r, name):
    """A field of a record the component returned, by its Python name."""
    return getattr(r, name.replace("_", "-"))


#: Who must act, by the kind of the planner's error.
WHO_MUST_ACT = {
    "malformed": "table",
    "unsupported": "lakesweep",
    "protocol": "host",
    "invalid-options": "operator",
    "unsafe": "wait",
}


class PlanRefused(Exception):
    """The planner's typed refusal: nothing may be deleted, and why.

    ``kind`` is the error's kind (``malformed``, ``unsupported``,
    ``protocol``, ``invalid-options``, ``unsafe``); ``reason`` the specific
    reason where the kind has one (``stale-pointer``, ``encoding``, ...),
    else the kind; ``details`` every field of the error as a dict (``uri``,
    ``field``, ``feature``, ``detail``); ``who_must_act`` the table's owner,
    lakesweep, the host, the operator, or nobody but time (``wait``)."""

    def __init__(self, error):
        self.kind = error.tag
        p = error.payload
        names = ("reason", "uri", "field", "feature", "detail")
        self.details = {n: getattr(p, n) for n in names if getattr(p, n, None) not in (None, "")}
        self.reason = self.details.get("reason", self.kind)
        self.who_must_act = WHO_MUST_ACT.get(self.kind, "host")
        labels = {
            "malformed": "malformed input",
            "unsupported": "unsupported",
            "protocol": "host protocol error",
            "invalid-options": "invalid option",
            "unsafe": "unsafe to proceed",
        }
        head = labels.get(self.kind, self.kind)
        if "reason" in self.details:
            head += f" ({self.details['reason']})"
        where = self.details.get("uri") or self.details.get("field")
        text = self.details.get("detail") or self.details.get("feature") or ""
        if self.kind == "unsupported":
            message = f"{head}: {text}" + (f" (in {where})" if where else "")
        else:
            message = f"{head} {where}: {text}" if where else f"{head}: {text}"
        super().__init__(message)

    @property
    def detail(self):
        """The error's own words (``details["detail"]``, or the feature)."""
        return self.details.get("detail") or self.details.get("feature") or ""


def default_wasm():
    """``LAKESWEEP_WASM``, else the component packaged beside this file,
    else the repository's build (``target/lakesweep.wasm``)."""
    env = os.environ.get("LAKESWEEP_WASM")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    packaged = here / "lakesweep.wasm"
    if packaged.exists():
        return packaged
    return here.parents[2] / "target" / "lakesweep.wasm"


def _bulk_bytes():
    """wasmtime-py 50 converts a ``list<u8>`` one byte at a time through
    Python (about a microsecond a byte: a 30 MB manifest set costs half a
    minute). This converts such lists in one copy each way, by writing and
    reading the value array wasmtime's C API holds. It is installed only
    when a round trip through the library's own per-byte code agrees (the
    value layout is the one this expects); otherwise the library's
    conversion stays."""
    import ctypes

    from wasmtime import _ffi as ffi
    from wasmtime.component import _types as types

    val_t = ffi.wasmtime_component_val_t
    size, off = ctypes.sizeof(val_t), val_t.of.offset
    u8, list_kind = ffi.WASMTIME_COMPONENT_U8.value, ffi.WASMTIME_COMPONENT_LIST.value
    per_byte_to, per_byte_from = types.ListType.convert_to_c, types.ListType.convert_from_c

    def to_c(self, store, val, ptr):
        if not self._is_bytes():
            return per_byte_to(self, store, val, ptr)
        if not isinstance(val, bytes):
            raise TypeError("expected bytes value")
        n = len(val)
        raw = ffi.wasmtime_component_vallist_t()
        ffi.wasmtime_component_vallist_new_uninit(raw, n)
        # In slices: the value array is size bytes a byte already; the
        # buffer that fills it stays small.
        step = 1 << 16
        buf = bytearray(min(n, step) * size)
        buf[0::size] = bytes([u8]) * min(n, step)
        base = ctypes.addressof(raw.data.contents) if n else 0
        for start in range(0, n, step):
            part = val[start:start + step]
            m = len(part)
            buf[off:m * size:size] = part
            ctypes.memmove(base + start * size, (ctypes.c_char * (m * size)).from_buffer(buf), m * size)
        ptr.contents.kind = ffi.WASMTIME_COMPONENT_LIST
        ptr.contents.of.list = raw

    def from_c(self, c):
        if not self._is_bytes():
            return per_byte_from(self, c)
        assert c.kind == list_kind
        try:
            n = c.of.list.size
            if n == 0:
                return b""
            raw = ctypes.string_at(c.of.list.data, n * size)
            if raw[0::size] != bytes([u8]) * n:
                raise TypeError("a list<u8> holding values other than u8")
            return raw[off::size]
        finally:
            ffi.wasmtime_component_vallist_delete(ctypes.byref(c.of.list))

    # The check: bytes written in bulk read back by the library's own
    # per-byte code, and the library's per-byte writing read in bulk.
    probe = bytes(range(256)) * 3

    class Probe(types.ListType):
        element = types.U8()

        def __del__(self):
            pass

    lt = Probe.__new__(Probe)
    try:
        v = val_t()
        to_c(lt, None, probe, ctypes.pointer(v))
        ok = per_byte_from(lt, v) == probe
        w = val_t()
        per_byte_to(lt, None, probe, ctypes.pointer(w))
        ok = ok and from_c(lt, w) == probe
    except Exception as e:  # noqa: BLE001: any surprise keeps the library's code
        ok = False
        _bulk_bytes.why = repr(e)
    if ok:
        types.ListType.convert_to_c, types.ListType.convert_from_c = to_c, from_c
    return ok


#: Whether ``list<u8>`` values cross in one copy (see :func:`_bulk_bytes`).
BULK_BYTES = _bulk_bytes()

_COMPILED = {}
#: The SHA-256 of the bytes each compiled component was made from.
_DIGESTS = {}


def cache_dir():
    """Where compiled components are kept between processes:
    ``LAKESWEEP_CACHE_DIR`` (empty: no cache), else
    ``$XDG_CACHE_HOME/lakesweep``, else ``~/.cache/lakesweep`` (the
    command line's cache too)."""
    env = os.environ.get("LAKESWEEP_CACHE_DIR")
    if env is not None:
        return Path(env) if env else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "lakesweep"


def _wasmtime_version():
    """The installed wasmtime-py's version (a compiled component is only
    good for the runtime that made it)."""
    try:
        from importlib.metadata import version

        return version("wasmtime")
    except Exception:  # noqa: BLE001
        return getattr(wasmtime, "__version__", "unknown")


def _compiled(path):
    """The engine and the compiled component for ``path``: compiled once
    per machine (kept in :func:`cache_dir`, named by the component's
    SHA-256 and this wasmtime's version: a cached file is used only for the
    very bytes and runtime it was made from), loaded once per process (each
    plan gets its own store and instance)."""
    if path in _COMPILED:
        return _COMPILED[path]
    engine = wasmtime.Engine()
    data = Path(path).read_bytes()
    # What was compiled, by its digest (lakesweep.component_identity).
    _DIGESTS[path] = hashlib.sha256(data).hexdigest()
    comp = None
    cached = None
    d = cache_dir()
    if d is not None:
        key = hashlib.sha256(data + f"\0wasmtime-py {_wasmtime_version()}".encode()).hexdigest()
        cached = d / f"python-{key}.cwasm"
        if cached.exists():
            try:
                comp = wc.Component.deserialize_file(engine, str(cached))
            except Exception:  # noqa: BLE001: a stale or damaged cache file is compiled again
                comp = None
    if comp is None:
        comp = wc.Component.from_file(engine, path)
        if cached is not None:
            try:
                d.mkdir(parents=True, exist_ok=True)
                tmp = cached.with_suffix(f".tmp-{os.getpid()}")
                tmp.write_bytes(comp.serialize())
                os.replace(tmp, cached)
            except OSError:
                pass  # no cache: compiled again next time
    _COMPILED[path] = (engine, comp)
    return _COMPILED[path]



class Component:
    """One instance of the planner component."""

    def __init__(self, wasm=None):
        #: The component file this instance was compiled from.
        self.path = str(wasm or default_wasm())
        engine, comp = _compiled(self.path)
        self.store = wasmtime.Store(engine)
        self.instance = wc.Linker(engine).instantiate(self.store, comp)
        self._iface = self.instance.get_export_index(self.store, INTERFACE)
        self._funcs = {}

    def call(self, name, *args):
        """Calls export ``name`` of the planner interface; a ``result``'s
        error is raised as :class:`PlanRefused`."""
        f = self._funcs.get(name)
        if f is None:
            idx = self.instance.get_export_index(self.store, name, self._iface)
            if idx is None:
                raise KeyError(f"the component exports no {name}")
            f = self.instance.get_func(self.store, idx)
            self._funcs[name] = (f, f.type(self.store).result)
            f = self._funcs[name]
        func, result_ty = f
        out = func(self.store, *args)
        func.post_return(self.store)
        if isinstance(result_ty, wc.ResultType):
            # wasmtime-py gives a result as its payload, tagged ok/err only
            # when the two cases could be confused. No planner function
            # succeeds with a variant, so any variant is the error case.
            if isinstance(out, wc.Variant) and out.tag in ("ok", "err"):
                if out.tag == "err":
                    raise PlanRefused(out.payload)
                return out.payload
            if isinstance(out, wc.Variant):
                raise PlanRefused(out)
        return out
