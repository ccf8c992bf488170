import os
import re
import shutil
import subprocess
import tempfile
import threading

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../.."))


@pytest.fixture(scope="session")
def parley_server():
    """Builds and starts `parley serve` with a funded user and an API key."""
    d = tempfile.mkdtemp(prefix="parley-py-sdk-")
    binary = os.environ.get("PARLEY_BIN") or os.path.join(d, "parley")
    if not os.environ.get("PARLEY_BIN"):
        subprocess.run(["go", "build", "-o", binary, "./server/cmd/parley"], cwd=ROOT, check=True)
    data = os.path.join(d, "data")

    def admin(*args):
        return subprocess.run([binary, "admin", *args, "--data-dir", data], check=True, capture_output=True, text=True).stdout

    admin("create-user", "--email", "py@example.com", "--password", "py-password-123")
    admin("topup", "--email", "py@example.com", "--usd", "100")
    key = admin("create-key", "--email", "py@example.com").strip()
    proc = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", data, "--insecure-cookies", "--sim-time-scale", "0", "--rate-limits", "off"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = None
    for line in proc.stdout:
        m = re.search(r"listening on (http://[0-9.:]+)", line)
        if m:
            url = m.group(1)
            break
    assert url, "parley did not start"
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
    yield {"url": url, "key": key}
    proc.kill()
    proc.wait()
    shutil.rmtree(d, ignore_errors=True)
