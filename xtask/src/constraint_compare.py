"""Compare llguidance and outlines-core on the reply schemas Ferret's stages send.

Run by `cargo xtask bench --constraints`: reads the SmolLM2 GGUF's byte-level BPE vocabulary,
the JSON Schemas and replies of the model exchanges recorded under fixtures/search/, and for
each stage's schema measures, with each library, the time to make the constraint ready for a
request (compile the schema, and for outlines-core index the vocabulary against it) and the
time to compute the allowed tokens at each step of the recorded reply. Prints one JSON object.
"""

import glob
import json
import statistics
import struct
import sys
import time

import llguidance
import os
import tempfile
from outlines_core import Index, Vocabulary
from outlines_core.json_schema import build_regex_from_schema
from tokenizers import Tokenizer, decoders, models, pre_tokenizers


def read_gguf_vocabulary(path):
    """The tokens, merges and end-of-sequence id of a GGUF's byte-level BPE tokenizer."""
    kv = {}
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise SystemExit(f"{path} is not a GGUF file")
        f.read(4)
        _, count = struct.unpack("<QQ", f.read(16))

        def string():
            (n,) = struct.unpack("<Q", f.read(8))
            return f.read(n).decode("utf-8", "replace")

        scalar = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
                  10: "<Q", 11: "<q", 12: "<d"}

        def value(kind):
            if kind == 8:
                return string()
            if kind in scalar:
                size = struct.calcsize(scalar[kind])
                return struct.unpack(scalar[kind], f.read(size))[0]
            if kind == 9:
                (inner,) = struct.unpack("<I", f.read(4))
                (n,) = struct.unpack("<Q", f.read(8))
                return [value(inner) for _ in range(n)]
            raise SystemExit(f"unknown GGUF value type {kind}")

        for _ in range(count):
            key = string()
            (kind,) = struct.unpack("<I", f.read(4))
            kv[key] = value(kind)
            if "tokenizer.ggml.merges" in kv and "tokenizer.ggml.eos_token_id" in kv:
                break
    return kv["tokenizer.ggml.tokens"], kv["tokenizer.ggml.merges"], kv["tokenizer.ggml.eos_token_id"]


def byte_decoder():
    """GPT-2's byte-level alphabet, character to byte."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    chars = printable[:]
    n = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(printable, chars)}


def recorded_schemas(root):
    """The first schema each stage sent, with a reply the model gave to it."""
    by_stage = {}
    for path in sorted(glob.glob(f"{root}/*/exchanges.jsonl")):
        for line in open(path):
            exchange = json.loads(line)
            if exchange["kind"] != "model":
                continue
            schema = exchange["request"].get("json_schema")
            completion = exchange["outcome"].get("completion")
            if not schema or not completion:
                continue
            system = exchange["request"]["messages"][0]["content"]
            stage = " ".join(system.split()[:4])
            by_stage.setdefault(stage, (schema, completion["text"]))
    return by_stage


def median_ms(make, runs=3):
    """The median time of `runs` calls of `make`, in milliseconds, and what the last made."""
    times, made = [], None
    for _ in range(runs):
        start = time.perf_counter()
        made = make()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), made


def main():
    gguf, fixtures = sys.argv[1], sys.argv[2]
    tokens, merges, eos = read_gguf_vocabulary(gguf)
    vocab = {token: i for i, token in enumerate(tokens)}
    pairs = [tuple(m.split(" ", 1)) for m in merges]
    tokenizer = Tokenizer(models.BPE(vocab, pairs))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()

    start = time.perf_counter()
    tokenizer_json = os.path.join(tempfile.mkdtemp(), "tokenizer.json")
    tokenizer.save(tokenizer_json)
    ll_tokenizer = llguidance.LLTokenizer(tokenizer_json, n_vocab=len(tokens), eos_token=eos)
    ll_setup = time.perf_counter() - start

    start = time.perf_counter()
    to_byte = byte_decoder()
    by_bytes = {}
    for i, token in enumerate(tokens):
        if i == eos:
            continue
        try:
            raw = bytes(to_byte[c] for c in token)
        except KeyError:
            continue  # special tokens outside the byte alphabet
        by_bytes.setdefault(raw, []).append(i)
    oc_vocabulary = Vocabulary(eos, by_bytes)
    oc_setup = time.perf_counter() - start

    rows = []
    for stage, (schema, reply) in recorded_schemas(fixtures).items():
        ids = tokenizer.encode(reply).ids
        row = {"stage": stage, "reply_tokens": len(ids)}

        # Both compile the same language: compact JSON (no free whitespace), as Ferret asks.
        def ll_ready():
            grammar = llguidance.LLMatcher.grammar_from_json_schema(
                json.dumps(schema),
                defaults={"whitespace_flexible": False, "coerce_one_of": True})
            return llguidance.LLMatcher(ll_tokenizer, grammar)

        row["llguidance_ready_ms"], matcher = median_ms(ll_ready)
        # The recorded reply is tokenized afresh, not as the model wrote it (the grammar forced
        # some of its tokens): a step the grammar refuses ends the walk, and the steps walked
        # are reported.
        row["llguidance_error"] = matcher.get_error() or None
        steps = []
        for token in ids:
            start = time.perf_counter()
            matcher.compute_logit_bias()
            steps.append(time.perf_counter() - start)
            if not matcher.consume_token(token):
                break
        row["llguidance_step_ms"] = statistics.mean(steps) * 1000 if steps else None
        row["llguidance_steps"] = len(steps)

        try:
            def oc_ready():
                regex = build_regex_from_schema(json.dumps(schema), whitespace_pattern="")
                return Index(regex, oc_vocabulary)

            row["outlines_ready_ms"], index = median_ms(oc_ready)
            row["outlines_error"] = None
            state = index.get_initial_state()
            steps = []
            for token in ids:
                start = time.perf_counter()
                index.get_allowed_tokens(state)
                steps.append(time.perf_counter() - start)
                state = index.get_next_state(state, token)
                if state is None:
                    break
            row["outlines_step_ms"] = statistics.mean(steps) * 1000 if steps else None
            row["outlines_steps"] = len(steps)
        except Exception as error:  # a schema outlines-core cannot turn into a regex
            row["outlines_ready_ms"] = None
            row["outlines_step_ms"] = None
            row["outlines_steps"] = 0
            row["outlines_error"] = str(error).splitlines()[0][:160]
        rows.append(row)

    print(json.dumps({
        "vocabulary": len(tokens),
        "llguidance_tokenizer_ms": ll_setup * 1000,
        "outlines_vocabulary_ms": oc_setup * 1000,
        "llguidance": llguidance.__version__ if hasattr(llguidance, "__version__") else None,
        "stages": rows,
    }))


if __name__ == "__main__":
    main()
