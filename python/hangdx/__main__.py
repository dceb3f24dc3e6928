"""python -m hangdx ...: runs the hangdx command installed beside this package."""
import os
import shutil
import sys


def main() -> int:
    exe = shutil.which("hangdx")
    if not exe:
        sys.stderr.write("hangdx: the hangdx command is not on PATH\n")
        return 2
    os.execv(exe, [exe] + sys.argv[1:])
    return 2


if __name__ == "__main__":
    sys.exit(main())
