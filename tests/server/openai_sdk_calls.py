"""The official OpenAI Python SDK's own request builders against `ragform serve`.

Run by tests/server/serve_openai_sdk_real_test.cpp with the interpreter of scripts/models.sh's
environment (where the pinned `openai` package is installed):

    python openai_sdk_calls.py DECODER_URL ENCODER_URL API_KEY

Each call is the SDK's, with its defaults (the embeddings call asks for base64 unless told, the
chat call sends the SDK's own message objects back); each answer is checked against the same
request sent as plain JSON (urllib), so a reply the SDK parses but reads differently fails too.
Exits 0 when every check holds, else prints the failed check and exits 1.
"""
import base64
import json
import struct
import sys
import urllib.error
import urllib.request

import openai

DEC, ENC, KEY = sys.argv[1:4]
checks = 0


def check(cond, what):
    global checks
    if not cond:
        print(f"FAILED: {what}", file=sys.stderr)
        sys.exit(1)
    checks += 1


def raw(base, path, body):
    """The same request as plain JSON: the server's own answer, without the SDK."""
    req = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + KEY},
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def refused(fn, cls, code, what):
    try:
        fn()
    except cls as e:
        got = getattr(e, "code", None)
        check(got == code, f"{what}: code {got!r}, wanted {code!r} ({e})")
        return
    except Exception as e:  # noqa: BLE001 - the wrong kind of refusal is the failure
        check(False, f"{what}: raised {type(e).__name__}: {e}")
    check(False, f"{what}: accepted")


dec = openai.OpenAI(base_url=DEC + "/v1", api_key=KEY, max_retries=0, timeout=60)
enc = openai.OpenAI(base_url=ENC + "/v1", api_key=KEY, max_retries=0, timeout=60)

# Models: one each, the id every other call names.
models = [m.id for m in dec.models.list()]
check(len(models) == 1, f"decoder models {models}")
model = models[0]
emb_models = [m.id for m in enc.models.list()]
check(len(emb_models) == 1, f"encoder models {emb_models}")
emb_model = emb_models[0]
# models.retrieve (GET /v1/models/{id}): the listed object alone; another id is NotFoundError.
for client, mid in ((dec, model), (enc, emb_model)):
    got = client.models.retrieve(mid)
    listed = client.models.list().data[0]
    check(got.model_dump() == listed.model_dump(), f"models.retrieve({mid!r}) is the listed model")
refused(lambda: dec.models.retrieve("gpt-4o"), openai.NotFoundError, "model_not_found",
        "retrieving another model")

# Completions: greedy text equal to the plain request's, streamed or not.
prompt = "Once upon a time, there was a little girl named Lily."
c = dec.completions.create(model=model, prompt=prompt, max_tokens=8, temperature=0)
plain = raw(DEC, "/v1/completions",
            {"model": model, "prompt": prompt, "max_tokens": 8, "temperature": 0})
check(c.choices[0].text == plain["choices"][0]["text"], "completion text")
check(c.choices[0].finish_reason in ("length", "stop"), f"finish {c.choices[0].finish_reason}")
check(c.usage.prompt_tokens == plain["usage"]["prompt_tokens"], "completion usage")
streamed = "".join(
    ch.choices[0].text
    for ch in dec.completions.create(model=model, prompt=prompt, max_tokens=8, temperature=0,
                                     stream=True)
    if ch.choices)
check(streamed == c.choices[0].text, f"streamed completion {streamed!r} vs {c.choices[0].text!r}")

# Log-probs with echo, two prompts: one entry per token, the prompt's first without a log-prob,
# each top list the N likeliest with the token's own value when it is among them.
lp = dec.completions.create(model=model, prompt=[prompt, "The dog ran"], max_tokens=2,
                            temperature=0, logprobs=2, echo=True)
check(len(lp.choices) == 2, "two choices")
for choice in lp.choices:
    L = choice.logprobs
    n = len(L.tokens)
    check(n > 2 and len(L.token_logprobs) == n and len(L.top_logprobs) == n
          and len(L.text_offset) == n, "log-prob lists of one length")
    check(L.token_logprobs[0] is None, "the prompt's first token has no log-prob")
    check(all(v <= 0 for v in L.token_logprobs[1:]), "log-probs are at most 0")
    check(all(a <= b for a, b in zip(L.text_offset, L.text_offset[1:])), "offsets ascend")
    check("".join(L.tokens) == choice.text, "the tokens spell the echoed text")
    for tok, val, top in zip(L.tokens[1:], L.token_logprobs[1:], L.top_logprobs[1:]):
        check(1 <= len(top) <= 3, f"top list of {len(top)}")
        best = max(top.values())
        check(val <= best + 1e-6, "a top list holds the likeliest pieces")
        if tok in top:
            check(abs(top[tok] - val) < 1e-4, "a token's own value in its top list")
plain_lp = raw(DEC, "/v1/completions",
               {"model": model, "prompt": "The dog ran", "max_tokens": 2, "temperature": 0,
                "logprobs": 2, "echo": True})
check(plain_lp["choices"][0]["logprobs"]["token_logprobs"]
      == lp.choices[1].logprobs.token_logprobs, "log-probs equal the plain request's")

# Chat: greedy text equal to the plain request's; the SDK's own message object sent back (its
# unset fields as null); the stream's deltas spell the text; OpenAI's default-valued and
# metadata fields are accepted.
msgs = [{"role": "system", "content": "You tell short stories."},
        {"role": "user", "content": "Tell me about Lily."}]
chat = dec.chat.completions.create(model=model, messages=msgs, max_tokens=8, temperature=0)
plain_chat = raw(DEC, "/v1/chat/completions",
                 {"model": model, "messages": msgs, "max_tokens": 8, "temperature": 0})
check(chat.choices[0].message.content == plain_chat["choices"][0]["message"]["content"],
      "chat text")
check(chat.choices[0].message.role == "assistant", "chat role")
again = dec.chat.completions.create(
    model=model, max_tokens=4, temperature=0,
    messages=msgs + [chat.choices[0].message, {"role": "user", "content": "And then?"}])
check(isinstance(again.choices[0].message.content, str), "chat with the SDK's message object")
dumped = dec.chat.completions.create(
    model=model, max_tokens=4, temperature=0,
    messages=msgs + [chat.choices[0].message.model_dump(), {"role": "user", "content": "More."}])
check(dumped.choices[0].message.content == again.choices[0].message.content
      or isinstance(dumped.choices[0].message.content, str), "model_dump() of a message")
deltas = [ch.choices[0].delta.content or ""
          for ch in dec.chat.completions.create(model=model, messages=msgs, max_tokens=8,
                                                temperature=0, stream=True)
          if ch.choices]
check("".join(deltas) == chat.choices[0].message.content, "streamed chat")
fields = dec.chat.completions.create(
    model=model, messages=msgs, max_completion_tokens=4, temperature=0, seed=3, stop=["\n\n"],
    top_p=1, n=1, frequency_penalty=0, presence_penalty=0, user="u", store=False,
    metadata={"suite": "sdk"}, response_format={"type": "text"})
check(isinstance(fields.choices[0].message.content, str), "default-valued fields")

# Refusals the SDK raises as its own classes, with the server's code.
refused(lambda: dec.chat.completions.create(model="gpt-4o", messages=msgs, max_tokens=1),
        openai.NotFoundError, "model_not_found", "another model")
refused(lambda: dec.completions.create(model=model, prompt="x", max_tokens=1,
                                       extra_body={"n_predict": 5}),
        openai.BadRequestError, "unknown_field", "a field no route reads")
refused(lambda: dec.chat.completions.create(model=model, messages=msgs, max_tokens=1,
                                            logprobs=True),
        openai.BadRequestError, "unsupported_field", "chat log-probs (not implemented)")
refused(lambda: openai.OpenAI(base_url=DEC + "/v1", api_key="wrong", max_retries=0)
        .models.list(), openai.AuthenticationError, "invalid_api_key", "a wrong key")

# Embeddings: the SDK's default (base64) decodes to the float reply's numbers.
texts = ["the river bank", "a savings bank"]
b64 = enc.embeddings.create(model=emb_model, input=texts)
flt = enc.embeddings.create(model=emb_model, input=texts, encoding_format="float")
plain_emb = raw(ENC, "/v1/embeddings",
                {"model": emb_model, "input": texts, "encoding_format": "float"})
check(len(b64.data) == 2 and [d.index for d in b64.data] == [0, 1], "embedding indices")
for d, f, p in zip(b64.data, flt.data, plain_emb["data"]):
    check(len(d.embedding) == len(f.embedding) > 0, "embedding widths")
    check(all(abs(a - b) < 1e-6 * max(1.0, abs(b)) for a, b in zip(d.embedding, f.embedding)),
          "base64 and float embeddings agree")
    check(f.embedding == p["embedding"], "the SDK's floats are the plain reply's")
width = len(flt.data[0].embedding)
one = enc.embeddings.create(model=emb_model, input="the river bank", dimensions=width, user="u")
check(len(one.data[0].embedding) == width, "dimensions = the width")
refused(lambda: enc.embeddings.create(model=emb_model, input="x", dimensions=max(1, width // 2)),
        openai.BadRequestError, "unsupported_field", "fewer dimensions than the model's")
# The plain API's default is floats (the SDK asks for base64 itself); base64 is float32
# little-endian, as the SDK decodes it.
plain_default = raw(ENC, "/v1/embeddings", {"model": emb_model, "input": texts[0]})
check(plain_default["data"][0]["embedding"] == plain_emb["data"][0]["embedding"],
      "floats by default")
raw64 = raw(ENC, "/v1/embeddings",
            {"model": emb_model, "input": texts[0], "encoding_format": "base64"})["data"][0]["embedding"]
vals = struct.unpack("<%df" % width, base64.b64decode(raw64))
check(all(abs(a - b) < 1e-6 * max(1.0, abs(b)) for a, b in zip(vals, flt.data[0].embedding)),
      "the plain base64 reply decodes to the floats")

print(f"openai {openai.__version__}: {checks} checks passed")
