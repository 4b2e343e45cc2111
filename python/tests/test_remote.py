"""Readers and studies over a server: OpenAIReader.attention() against `ragform serve` (an
Attention equal to the local model's) and against a server that is not ragform
(NotImplementedError, no request sent); sure.evaluate against a server that refuses the key or
is not there raises the CLI's error instead of returning empty groups."""
import http.server
import json
import os
import re
import socket
import subprocess
import threading

import numpy as np
import pytest

import ragform


class Served:
    """`ragform serve -m MODEL` on a free loopback port (the port read from its stderr)."""

    def __init__(self, ragform_bin, model_path, *args, env=None):
        e = dict(os.environ, RAGFORM_PROGRESS="never")
        for k in ("RAGFORM_API_KEY", "OPENAI_API_KEY"):
            e.pop(k, None)
        e.update(env or {})
        self.p = subprocess.Popen([ragform_bin, "serve", "-m", model_path, "--host",
                                   "127.0.0.1", "--port", "0", *args],
                                  stderr=subprocess.PIPE, text=True, env=e)
        seen = ""
        for line in self.p.stderr:
            seen += line
            m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
            if m:
                self.url = m.group(1) + "/v1"
                break
        else:
            raise RuntimeError("ragform serve did not start: " + seen)
        # Keep reading stderr so that the server never blocks on a full pipe.
        threading.Thread(target=self.p.stderr.read, daemon=True).start()

    def close(self):
        self.p.terminate()
        self.p.wait(timeout=60)


@pytest.fixture(scope="module")
def keyed_server(ragform_bin, model_path):
    s = Served(ragform_bin, model_path, "--ctx", "2048", env={"RAGFORM_API_KEY": "K"})
    yield s
    s.close()


def closed_port_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_attention_through_ragform_serve_equals_the_local_model(keyed_server, model):
    r = ragform.OpenAIReader(keyed_server.url, api_key="K", retries=0)
    assert r.capabilities["attention"] is True
    prompt = "Once upon a time, there was a little girl named Lily."
    remote, local = r.attention(prompt), model.attention(prompt)
    assert isinstance(remote, ragform.Attention)
    assert remote.pieces == local.pieces and remote.layer == local.layer
    np.testing.assert_allclose(remote.mean, local.mean, rtol=1e-5, atol=1e-6)
    assert remote.abs == pytest.approx(local.abs, abs=1e-5)
    # The documentation says so (docs/python.md's reference is generated from it).
    assert "attention() works\n    against `ragform serve`" in ragform.OpenAIReader.__doc__


class _NotRagform(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible server that is not ragform (llama-server's /v1/models shape)."""
    posts = []

    def do_GET(self):
        body = json.dumps({"object": "list",
                           "data": [{"id": "m", "object": "model", "owned_by": "llamacpp"}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def do_POST(self):
        _NotRagform.posts.append(self.path)
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_attention_elsewhere_raises_not_implemented_without_a_request():
    srv = http.server.HTTPServer(("127.0.0.1", 0), _NotRagform)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        r = ragform.OpenAIReader(f"http://127.0.0.1:{srv.server_port}/v1", retries=0)
        assert r.capabilities["attention"] is False
        with pytest.raises(NotImplementedError, match="attention is not supported by this server"):
            r.attention("Once upon a time")
        with pytest.raises(NotImplementedError):
            r.hidden("Once upon a time", 1)
        assert _NotRagform.posts == []
    finally:
        srv.shutdown()
        srv.server_close()


def pairs_of(nq_records):
    return ragform.sure.perturb(nq_records[:2], kinds="format/json", docs=1)


def test_sure_evaluate_without_the_key_raises_the_servers_error(keyed_server, nq_records,
                                                                 tmp_path):
    pairs = pairs_of(nq_records)
    r = ragform.OpenAIReader(keyed_server.url, retries=0)
    with pytest.raises(RuntimeError) as e:
        ragform.sure.evaluate(r, pairs, store=tmp_path / "run.sqlite", progress=False)
    msg = str(e.value)
    assert msg.startswith("sure eval: ") and "rows unmeasured" in msg, msg
    assert "HTTP 401" in msg and "\n" not in msg
    # The rows stay for a resume with the key, which measures every pair.
    st = ragform.RunStore(tmp_path / "run.sqlite")
    assert st.counts(st.runs()[0]["id"])["unmeasured"] > 0
    out = ragform.sure.evaluate(ragform.OpenAIReader(keyed_server.url, api_key="K", retries=0),
                                pairs, store=tmp_path / "run.sqlite", progress=False)
    assert out["groups"] and out["stats"]["pairs_measured"] == len(pairs)
    assert out["stats"]["unmeasured"] == 0


def test_sure_evaluate_with_nothing_listening_raises(nq_records):
    r = ragform.OpenAIReader(closed_port_url(), retries=0, timeout=5)
    with pytest.raises(RuntimeError, match=r"^sure eval: .*no answer from"):
        ragform.sure.evaluate(r, pairs_of(nq_records), progress=False)


def test_openai_reader_concurrency_is_bounded_like_the_cli(ragform_bin):
    """Issue 40 (security 4): concurrency=10**6 opened 2,491 threads and sockets in one batch.
    It is refused before any connection, with the CLI's words for --concurrency."""
    url = closed_port_url()
    with pytest.raises(ValueError) as e:
        ragform.OpenAIReader(url, concurrency=10**6)
    assert str(e.value) == "concurrency: value too large: 1000000 (largest accepted: 1024)"
    r = subprocess.run([ragform_bin, "generate", "--reader", "openai", "--base-url", url,
                        "--concurrency", "1000000", "-p", "hi"], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr == "ragform: --" + str(e.value) + "\n"
    # The limit itself is accepted (no request is sent until a call).
    ragform.OpenAIReader(url, concurrency=1024)


class _BadBytes(http.server.BaseHTTPRequestHandler):
    """A server whose completion holds bytes that are not UTF-8 (0xFF 0xFE)."""

    def do_GET(self):
        body = b'{"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "x"}]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = b'{"choices": [{"index": 0, "text": "\xff\xfeab", "finish_reason": "stop"}]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_an_error_quoting_bytes_that_are_not_utf8_keeps_its_message():
    """Issue 40, second pass: the parse error quotes the server's byte 0xFF ("last read: '"\\xff'"),
    which PyErr_SetString cannot decode: the RuntimeError came with an empty message. Invalid
    bytes become U+FFFD and the message is the CLI's."""
    srv = http.server.HTTPServer(("127.0.0.1", 0), _BadBytes)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        r = ragform.OpenAIReader(f"http://127.0.0.1:{srv.server_port}/v1", retries=0)
        with pytest.raises(RuntimeError) as e:
            r.generate("Once upon a time")
        msg = str(e.value)
        assert msg.startswith("openai reader: generate: the server's answer is not JSON"), msg
        assert "ill-formed UTF-8" in msg and "\ufffd" in msg, msg
    finally:
        srv.shutdown()
        srv.server_close()
