"""Run a command in a network namespace of its own that holds only the loopback interface.

Some servers the tests start cannot be told to listen on 127.0.0.1 alone: Ray 2.60's GCS,
raylet and workers add a listener on every interface whatever node address they are given
(its runtime-env agent binds the host's own address). Run inside a new network namespace,
every interface they can listen on is loopback, so nothing the tests start is reachable from
another machine. `make test` runs the Ray tests this way:

    python tests/loopback_only.py COMMAND [ARG...]

Inside, TRACEWH_TEST_LOOPBACK_ONLY=1 is set (the Ray tests skip without it). Where a new
namespace cannot be made (no privilege for it), the command runs as it is, without that
variable, and says so."""

import fcntl
import os
import shutil
import socket
import struct
import subprocess
import sys

INSIDE = "--inside"
MARK = "TRACEWH_TEST_LOOPBACK_ONLY"
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def loopback_up():
    """Bring `lo` up: a new network namespace starts with it down."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH14s", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | IFF_UP, b""))


def main(argv):
    if argv and argv[0] == INSIDE:
        loopback_up()
        os.environ[MARK] = "1"
        os.execvp(argv[1], argv[1:])
    unshare = shutil.which("unshare")
    if unshare:
        probe = subprocess.run([unshare, "--net", "true"], capture_output=True)
        if probe.returncode == 0:
            os.execv(unshare, [unshare, "--net", "--", sys.executable, os.path.abspath(__file__),
                               INSIDE, *argv])
    print("loopback_only: no network namespace could be made here (unshare --net needs "
          "privilege): running without one; the tests that need it skip", file=sys.stderr)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
