"""A tiny pickle encoder that writes what torch's C++ pickler writes.

torch::jit::Pickler (protocol 2, tag_aggregates=false) as used by
FlightRecorder::dump() -> pickle_str(); see docs/flight-recorder.md
section 1.5. Differences from Python's pickle.dumps(protocol=2):

* dicts:  EMPTY_DICT MARK k v ... SETITEMS   (MARK/SETITEMS even when empty)
* lists:  EMPTY_LIST MARK x ... APPENDS      (MARK/APPENDS even when empty)
* tuples: EMPTY_TUPLE / TUPLE1 / TUPLE2 / TUPLE3 / MARK ... TUPLE
* str:    BINUNICODE (u32 length) + BINPUT; memoized *by value* (BINGET later)
* int:    BININT1 (0..255), BININT2 (256..65535), BININT (other int32),
          LONG1 with an 8-byte two's-complement payload otherwise
* float:  BINFLOAT (big-endian double);  bool: NEWTRUE/NEWFALSE;  None: NONE
* containers (dict/list/tuple) are memoized *by pointer* only when shared
  (C++: use_count() > 1): first emission followed by BINPUT, later BINGET.
* one memo counter; BINPUT/BINGET up to id 255, LONG_BINPUT/LONG_BINGET after.
* the root dict is always memoized (BINPUT just before STOP).

`shared` is the set of id()s of containers to memoize by pointer. With
shared=None, a container is memoized when it occurs more than once in the
object tree (what use_count() > 1 amounts to once the recorder's own
references are gone).
"""
import struct

_pack_I = struct.Struct("<I").pack
_pack_H = struct.Struct("<H").pack
_pack_i = struct.Struct("<i").pack
_pack_q = struct.Struct("<q").pack
_pack_d = struct.Struct(">d").pack


def count_shared(obj):
    """ids of containers referenced more than once in the tree of `obj`."""
    seen, shared = set(), set()
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, (dict, list, tuple)):
            i = id(o)
            if i in seen:
                shared.add(i)
                continue
            seen.add(i)
            if isinstance(o, dict):
                stack.extend(o.keys())
                stack.extend(o.values())
            else:
                stack.extend(o)
    return shared


class Encoder:
    """Streaming encoder: one memo for the whole pickle, like one Pickler."""

    def __init__(self, shared=None):
        self.out = bytearray()
        self.memo_id = 0
        self.str_memo = {}     # str -> memo id
        self.ptr_memo = {}     # id(container) -> memo id
        self.shared = shared   # ids to memoize by pointer, or None
        self._keep = []        # keep memoized containers alive (ids stay valid)

    # -- memo ---------------------------------------------------------------
    def _binput(self):
        m = self.memo_id
        if m <= 255:
            self.out += b"q" + bytes((m,))
        else:
            self.out += b"r" + _pack_I(m)
        self.memo_id = m + 1
        return m

    def _binget(self, m):
        if m <= 255:
            self.out += b"h" + bytes((m,))
        else:
            self.out += b"j" + _pack_I(m)

    # -- values -------------------------------------------------------------
    def str_(self, s):
        m = self.str_memo.get(s)
        if m is not None:
            self._binget(m)
            return
        b = s.encode("utf-8")
        self.out += b"X" + _pack_I(len(b)) + b
        self.str_memo[s] = self._binput()

    def int_(self, n):
        out = self.out
        if 0 <= n <= 255:
            out += b"K" + bytes((n,))
        elif 256 <= n <= 65535:
            out += b"M" + _pack_H(n)
        elif -2147483648 <= n <= 2147483647:
            out += b"J" + _pack_i(n)
        else:
            out += b"\x8a\x08" + _pack_q(n)

    def value(self, v):
        t = type(v)
        if t is str:
            self.str_(v)
        elif t is bool:
            self.out += b"\x88" if v else b"\x89"
        elif t is int:
            self.int_(v)
        elif v is None:
            self.out += b"N"
        elif t is float:
            self.out += b"G" + _pack_d(v)
        elif t is dict or t is list or t is tuple:
            self.container(v)
        else:
            raise TypeError("cannot encode %r" % (t,))

    def container(self, v):
        key = id(v)
        share = self.shared is not None and key in self.shared
        if share:
            m = self.ptr_memo.get(key)
            if m is not None:
                self._binget(m)
                return
        t = type(v)
        out = self.out
        if t is dict:
            out += b"}("
            for k, x in v.items():
                self.value(k)
                self.value(x)
            self.out += b"u"
        elif t is list:
            out += b"]("
            for x in v:
                self.value(x)
            self.out += b"e"
        else:
            n = len(v)
            if n == 0:
                out += b")"
            elif n <= 3:
                for x in v:
                    self.value(x)
                self.out += (b"\x85", b"\x86", b"\x87")[n - 1]
            else:
                out += b"("
                for x in v:
                    self.value(x)
                self.out += b"t"
        if share:
            self.ptr_memo[key] = self._binput()
            self._keep.append(v)

    def dumps(self, obj):
        # The root IValue is held by the caller and by pickle_str()'s argument
        # (use_count() > 1), so the real dumps end with "u q<n> .": memoize it.
        if self.shared is not None and isinstance(obj, (dict, list, tuple)):
            self.shared = set(self.shared) | {id(obj)}
        self.out += b"\x80\x02"
        self.value(obj)
        self.out += b"."
        return bytes(self.out)


def dumps(obj, shared=None):
    """Encodes `obj` like torch's C++ pickler. shared: see module doc."""
    if shared is None:
        shared = count_shared(obj)
    return Encoder(shared).dumps(obj)
