import asyncio
import os
import re
import subprocess
import sys
import time

import pytest

from parley_client import AsyncParley, Code, ConnectError, Parley, prompt, retry_after
from parley.v1 import chat_connect, model_pb2

README = os.path.join(os.path.dirname(__file__), "..", "README.md")


def test_readme_example(parley_server):
    code = re.search(r"```python\n(.*?)```", open(README).read(), re.S).group(1)
    env = {**os.environ, "PARLEY_URL": parley_server["url"], "PARLEY_API_KEY": parley_server["key"]}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert len(out.strip()) > 20


@pytest.mark.parametrize("protocol", ["connect", "grpc"])
def test_stream(parley_server, protocol):
    p = Parley(parley_server["url"], api_key=parley_server["key"], protocol=protocol)
    events = list(p.complete_stream(prompt("sim-small", f"hello over {protocol}")))
    assert events[0].HasField("started")
    assert events[-1].finished.finish_reason == 1  # FINISH_REASON_STOP
    assert "".join(e.delta.text for e in events)


def test_async_stream(parley_server):
    async def run():
        p = AsyncParley(parley_server["url"], api_key=parley_server["key"])
        return [t async for t in p.stream_text("sim-small", "async hello")]

    assert "".join(asyncio.run(run()))


def test_session_cookie(parley_server):
    import urllib.request
    import json

    req = urllib.request.Request(parley_server["url"] + "/parley.v1.AuthService/SignUp", method="POST",
                                 data=json.dumps({"email": "py-cookie@example.com", "password": "cookie-password-1"}).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req) as res:
        session = re.search(r"Session_id=([^;]+)", res.headers["set-cookie"]).group(1)
    p = Parley(parley_server["url"], session=session)
    me = p.auth.get_me(__import__("parley.v1.auth_pb2", fromlist=["x"]).GetMeRequest())
    assert me.user.email == "py-cookie@example.com"


def test_errors(parley_server):
    p = Parley(parley_server["url"], api_key="pk_nope")
    with pytest.raises(ConnectError) as e:
        p.models.list_models(model_pb2.ListModelsRequest())
    assert e.value.code == Code.UNAUTHENTICATED
    assert retry_after(e.value) is None
    # The login throttle answers resource_exhausted with RetryInfo.
    from parley.v1 import auth_pb2
    anon = Parley(parley_server["url"])
    err = None
    for _ in range(40):
        try:
            anon.auth.login(auth_pb2.LoginRequest(email="nobody@example.com", password="wrong-password-1"))
        except ConnectError as ex:
            if ex.code == Code.RESOURCE_EXHAUSTED:
                err = ex
                break
    assert err is not None and retry_after(err) > 0


def test_streaming_overhead(parley_server, capsys):
    n = 30
    raw = chat_connect.ChatServiceClientSync(parley_server["url"])
    headers = {"authorization": f"Bearer {parley_server['key']}"}
    t0 = time.perf_counter()
    raw_events = sum(1 for _ in range(n) for _ in raw.complete_stream(prompt("sim-small", "measure"), headers=headers))
    raw_s = time.perf_counter() - t0
    p = Parley(parley_server["url"], api_key=parley_server["key"])
    t0 = time.perf_counter()
    sdk_events = sum(1 for _ in range(n) for _ in p.complete_stream(prompt("sim-small", "measure")))
    sdk_s = time.perf_counter() - t0
    assert raw_events == sdk_events
    with capsys.disabled():
        print(f"\nstreaming {n} answers ({raw_events} events): raw {raw_s*1000:.1f} ms ({raw_s/raw_events*1e6:.1f} µs/event), "
              f"SDK {sdk_s*1000:.1f} ms ({sdk_s/sdk_events*1e6:.1f} µs/event)")
