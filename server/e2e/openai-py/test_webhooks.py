"""Webhooks: an endpoint on a local receiver gets batch.completed and
response.completed (or .incomplete) events, signed as Standard Webhooks
sign them — verified here with the reference library — at least once
across an outage (the receiver's first answer is a 500: the event comes
again, with the same webhook-id)."""
import http.server
import json
import os
import threading
import time

import httpx
import standardwebhooks


class Receiver(http.server.BaseHTTPRequestHandler):
    got = []
    lock = threading.Lock()

    def do_POST(self):
        body = self.rfile.read(int(self.headers["content-length"]))
        with Receiver.lock:
            Receiver.got.append((dict(self.headers), body))
            first = len(Receiver.got) == 1
        self.send_response(500 if first else 204)
        self.end_headers()

    def log_message(self, *args):
        pass


def _events(secret, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        with Receiver.lock:
            got = list(Receiver.got)
        verified = []
        for headers, body in got:
            wh = standardwebhooks.Webhook(secret)
            lower = {k.lower(): v for k, v in headers.items()}
            verified.append((lower["webhook-id"], wh.verify(body, lower)))
        yield verified
        time.sleep(0.1)


def test_events_are_signed_and_delivered_at_least_once(client, key):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    base = os.environ["PARLEY_URL"].rstrip("/")
    r = httpx.post(f"{base}/parley.v1.WebhookService/CreateWebhookEndpoint", headers={"Authorization": f"Bearer {key}"},
                   json={"url": url, "events": ["batch.completed", "response.completed", "response.incomplete"]})
    assert r.status_code == 200, r.text
    secret = r.json()["secret"]
    assert secret.startswith("whsec_")

    line = {"custom_id": "one", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "sim-small", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}}
    f = client.files.create(file=("w.jsonl", (json.dumps(line) + "\n").encode()), purpose="batch")
    b = client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h")
    resp = client.responses.create(model="sim-small", input="hello", background=True, max_output_tokens=5)

    for verified in _events(secret):
        types = {p["type"]: (i, p) for i, p in verified}
        if "batch.completed" in types and any(t.startswith("response.") for t in types) and len(verified) >= 3:
            break
    else:
        raise AssertionError(f"events not all delivered: {verified}")
    bid, batch_event = types["batch.completed"]
    assert batch_event["object"] == "event" and batch_event["data"]["id"] == b.id and batch_event["id"] == bid
    resp_event = [p for _, p in verified if p["type"].startswith("response.")][0]
    assert resp_event["data"]["id"] == resp.id
    # The first attempt got a 500: that event came again, with the same id.
    ids = [i for i, _ in verified]
    assert len(ids) > len(set(ids)), ids
    # A forged signature does not verify.
    headers, body = Receiver.got[-1]
    lower = {k.lower(): v for k, v in headers.items()}
    lower["webhook-signature"] = "v1,AAAA"
    try:
        standardwebhooks.Webhook(secret).verify(body, lower)
        raise AssertionError("a forged signature verified")
    except standardwebhooks.WebhookVerificationError:
        pass
    server.shutdown()
