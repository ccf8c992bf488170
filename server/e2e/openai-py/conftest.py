"""The gateway under test comes from the environment, set by
server/e2e/openai_py_test.go: PARLEY_URL (base URL, without /v1), PARLEY_KEY
(a funded key) and PARLEY_BROKE_KEY (a key whose account has no balance)."""
import os

import openai
import pytest


def _env(name):
    v = os.environ.get(name)
    if not v:
        pytest.skip(f"{name} is not set: run via `go test ./server/e2e/ -run TestOfficialOpenAIPythonSDK`")
    return v


@pytest.fixture(scope="session")
def base_url():
    return _env("PARLEY_URL").rstrip("/") + "/v1"


@pytest.fixture(scope="session")
def key():
    return _env("PARLEY_KEY")


@pytest.fixture(scope="session")
def broke_key():
    return _env("PARLEY_BROKE_KEY")


@pytest.fixture(scope="session")
def client(base_url, key):
    return openai.OpenAI(base_url=base_url, api_key=key, max_retries=0)
