"""Writes the small pickles the C++ pickle tests read, with CPython's own
pickle module (the independent reference). Run: python3 make_pickles.py"""
import os
import pickle

shared = {"name": "f", "filename": "a.py", "line": 3}
obj = {
    "version": "2.10",
    "entries": [
        {"frames": [shared], "x": -1, "big": 1796021190774836354, "f": 1.5,
         "t": True, "n": None, "tup": ("0", "default_pg"),
         "huge": 2**70, "neg": -300000, "u": "h\u00e9llo"},
        {"frames": [shared]},
    ],
}
for proto in (2, 3, 4, 5):
    data = dict(obj)
    if proto >= 4:
        # Protocols 2 and 3 pickle sets and bytes through GLOBAL + REDUCE
        # (builtins.set, _codecs.encode), which a safe reader refuses.
        data["entries"] = [dict(obj["entries"][0], s={1, 2}, b=b"\x00\x01"), obj["entries"][1]]
    with open(f"cpython_proto{proto}_data.pickle", "wb") as f:
        f.write(pickle.dumps(data, protocol=proto))


class Evil:
    def __reduce__(self):
        return (os.system, ("touch /tmp/hangdx_pwned",))


for proto in (2, 4):
    with open(f"evil_proto{proto}_data.pickle", "wb") as f:
        f.write(pickle.dumps(Evil(), protocol=proto))
