"""Readable names for mangled C++ kernel names (`_ZN2at6native...`), for display only: the
stored name stays exact (it is what queries, diffs and rules match).

binutils' c++filt demangles them when it is installed, one process for all the names of a
report; without it, names stay mangled. Not the `cxxfilt` package: it calls the same
libstdc++ `__cxa_demangle` through ctypes, and its last release is from 2021.
"""

import re
import shutil
import subprocess

_MANGLED = re.compile(r"_Z[A-Za-z0-9_.$]+")


def demangle(names):
    """{name: demangled name} for the Itanium-mangled names among `names` that c++filt
    reads; {} when c++filt is not installed or fails."""
    mangled = sorted({name for name in names if name and _MANGLED.fullmatch(name)})
    tool = shutil.which("c++filt")
    if not mangled or tool is None:
        return {}
    try:
        result = subprocess.run([tool], input="\n".join(mangled) + "\n", capture_output=True,
                                text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return {}
    lines = result.stdout.splitlines()
    if len(lines) != len(mangled):
        return {}
    return {name: readable for name, readable in zip(mangled, lines) if readable != name}
