"""Build a fused ONNX graph of all-MiniLM-L6-v2 straight from its safetensors weights.

    python export_minilm.py MODEL_DIR OUT_DIR            # write the two models
    python export_minilm.py MODEL_DIR OUT_DIR --check [--corpus corpus.jsonl]

MODEL_DIR holds config.json, model.safetensors and tokenizer.json. The export writes
OUT_DIR/model.fused.onnx (float32) and OUT_DIR/model.fused.int8.onnx (dynamically quantized)
and prints one JSON line saying what it wrote. --check compares the sentence vectors of
both, and of MODEL_DIR/model.int8.onnx if present, with a plain numpy forward pass, prints
the cosines as one JSON line, and exits non-zero if float falls below 0.99999 or int8
below 0.995.

Why build the graph by hand: a generic PyTorch export spells every step of BERT out in
standard ops (several hundred nodes for six layers), and ONNX Runtime then runs attention as
a chain of reshapes, transposes and small matrix products. ONNX Runtime has fused kernels
for exactly this architecture in its `com.microsoft` domain, and its transformer optimizer
would rewrite a PyTorch export into them. Emitting that optimized graph directly needs no
torch and no export at all: one EmbedLayerNormalization, and per layer one Attention, two
SkipLayerNormalization, one BiasGelu and three MatMul. Dynamic quantization then turns
Attention into QAttention and the MatMuls into int8 matrix products.

Dynamic quantization gives each activation tensor a single scale, and BERT's
activations are lopsided: a few input channels reach 20-30 (the [CLS] token on one channel,
punctuation on others) while most stay within about 2. Quantized as they are, the sentence
vectors drift to a cosine of about 0.993 from float. Two exact rewrites of the int8 graph
(the float one has no need of them) bring that to about 0.997 (0.998 with --full-range):

- Outlier channels, in the MatMuls (LLM.int8()'s decomposition): the few input channels
  whose peak dwarfs the rest are zeroed in the int8 product and added back by a small float
  MatMul over just those channels.
- Smoothing, in Attention, whose projection sits inside the kernel with no room for a float
  side product (SmoothQuant): input channel j is divided by s_j and weight row j multiplied
  by it, with s_j = sqrt(peak of channel j / peak of weight row j). The product is unchanged
  and the channels' ranges even out. (Smoothing the MatMuls as well measured no better, and
  worse for the one after GELU.)

Both need each channel's peak, which the numpy reference below measures on a handful of
built-in sentences: the lopsided channels belong to the weights, not to the text.

Only onnx, onnxruntime, numpy, safetensors and tokenizers are needed (no torch).
"""

import argparse
import json
import logging
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file

FUSED = "model.fused.onnx"
FUSED_INT8 = "model.fused.int8.onnx"
# Name suffix of the float side products that carry the outlier channels.
OUTLIER_MATMUL = ".outlier_product"
# The Microsoft contrib domain holds the fused transformer kernels.
MS = "com.microsoft"
# Ferret cuts inputs at 256 tokens (sentence-transformers' limit for this model).
MAX_TOKENS = 256
# A channel counts as an outlier when its peak magnitude is this many times the median
# channel's peak. 4 catches the handful per layer that matter; lower splits off dozens for
# no measurable gain.
OUTLIER_FACTOR = 4.0
# SmoothQuant's migration strength: 0.5 splits the range evenly between activation and weight.
SMOOTHING_ALPHA = 0.5
# Sentences whose activations locate the outlier channels. Varied on purpose: short queries,
# long sentences, punctuation, brackets, numbers and a non-scientific register.
CALIBRATION_TEXTS = [
    "what is the capital of france",
    "symptoms of vitamin B12 deficiency",
    "How do I reset my password?",
    "A man is playing a guitar on the street, and a small crowd has gathered to listen.",
    "The weather was lovely today; we walked along the river (about 5 km) before lunch.",
    "Mutations in the BRCA1 gene increase the risk of breast and ovarian cancer, "
    "although penetrance varies widely between families.",
    "In a randomized controlled trial of 1,204 adults, daily aspirin did not reduce "
    "all-cause mortality (hazard ratio 0.97; 95% CI, 0.88-1.07).",
    "The function returns an error if the file does not exist: check the path first.",
    "Photosynthesis converts light energy into chemical energy, stored as glucose.",
    "Results: Expression of TNF-alpha was elevated in 14 of 20 samples [p < 0.01], "
    "whereas IL-6 levels were unchanged.",
    "Rust's borrow checker rejects code that could lead to data races.",
    "cheap flights to tokyo in march",
]


def load_model(model_dir):
    config = json.loads((model_dir / "config.json").read_text())
    weights = load_file(str(model_dir / "model.safetensors"))
    # Some exports prefix every name with "bert."; the graph below wants bare names.
    weights = {k.removeprefix("bert."): v.astype(np.float32, copy=False)
               for k, v in weights.items() if v.dtype.kind == "f"}
    # The fused kernels hard-code BERT's choices; refuse a config they would silently mis-run.
    expected = {"model_type": "bert", "hidden_act": "gelu",
                "position_embedding_type": "absolute"}
    for key, value in expected.items():
        if config.get(key, value) != value:
            sys.exit(f"config.json has {key}={config.get(key)!r}; this exporter only handles {value!r}")
    return config, weights


# ---------------------------------------------------------------------------------------
# The fused graph
# ---------------------------------------------------------------------------------------

def packed_qkv(w, layer):
    """Q, K and V as one [hidden, 3*hidden] projection, so the kernel does them in a single
    GEMM and the quantizer turns the whole block into one QAttention."""
    a = f"{layer}.attention.self"
    weight = np.concatenate([w[f"{a}.{n}.weight"].T for n in ("query", "key", "value")], axis=1)
    bias = np.concatenate([w[f"{a}.{n}.bias"] for n in ("query", "key", "value")])
    return weight, bias


def build_graph(config, w, plan=None):
    """The fused graph. `plan`, from calibrate(), maps a layer to its outlier channels and
    smoothing scales (see the module doc); None for the float model, which needs neither."""
    plan = plan or {}
    hidden = config["hidden_size"]
    heads = config["num_attention_heads"]
    eps = float(config["layer_norm_eps"])
    inits, nodes = [], []

    def const(name, array):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    # onnx's shape inference knows nothing of com.microsoft ops, and the quantizer needs the
    # type of every tensor it touches, so each intermediate is declared by hand.
    infos = []

    def node(op, inputs, output, domain="", elem=TensorProto.FLOAT, width=hidden, **attrs):
        nodes.append(helper.make_node(op, inputs, [output], name=output, domain=domain, **attrs))
        dims = ["batch", "sequence"] + ([width] if width else [])
        infos.append(helper.make_tensor_value_info(output, elem, dims))
        return output

    def rescaled(x, name, weight):
        """x and weight ([in, out]) as the int8 product should see them: outlier channels
        zeroed, or channels smoothed, as the plan says."""
        if name not in plan:
            return x, weight
        channels, scale = plan[name]
        if scale is None:
            scale = np.ones(weight.shape[0], dtype=np.float32)
        factor = (1.0 / scale).astype(np.float32)
        factor[channels] = 0.0
        x = node("Mul", [x, const(f"{name}.input_scale", factor)], f"{name}.scaled_input",
                 width=weight.shape[0])
        return x, weight * scale[:, None]

    def dense(x, name):
        """x @ W without the bias: every dense layer's bias is folded into the op after it."""
        # Torch's Linear stores [out, in]; MatMul wants [in, out].
        weight = w[f"{name}.weight"].T
        out = weight.shape[1]
        channels = plan[name][0] if name in plan else []
        main_x, main_weight = rescaled(x, name, weight)
        product = node("MatMul", [main_x, const(f"{name}.weight", main_weight)],
                       f"{name}.main" if channels else name, width=out)
        if not channels:
            return product
        picked = node("Gather", [x, const(f"{name}.outlier_channels", np.asarray(channels, np.int64))],
                      f"{name}.outlier_inputs", width=len(channels), axis=2)
        # The name suffix OUTLIER_MATMUL tells quantize() to leave this product in float.
        side = node("MatMul", [picked, const(f"{name}.outlier_weight", weight[channels])],
                    f"{name}{OUTLIER_MATMUL}", width=out)
        return node("Add", [product, side], name, width=out)

    # The fused kernels take int32 ids and masks; Ferret hands over int64.
    int32 = {"elem": TensorProto.INT32, "width": None, "to": TensorProto.INT32}
    ids = node("Cast", ["input_ids"], "input_ids_int32", **int32)
    types = node("Cast", ["token_type_ids"], "token_type_ids_int32", **int32)
    mask = node("Cast", ["attention_mask"], "attention_mask_int32", **int32)

    # Word + position + token-type lookup and the first LayerNorm in one kernel. Positions are
    # 0..sequence-1, as in BERT whatever the padding, so no position_ids input is needed.
    e = "embeddings"
    h = node("EmbedLayerNormalization",
             [ids, types,
              const(f"{e}.word_embeddings.weight", w[f"{e}.word_embeddings.weight"]),
              const(f"{e}.position_embeddings.weight", w[f"{e}.position_embeddings.weight"]),
              const(f"{e}.token_type_embeddings.weight", w[f"{e}.token_type_embeddings.weight"]),
              const(f"{e}.LayerNorm.weight", w[f"{e}.LayerNorm.weight"]),
              const(f"{e}.LayerNorm.bias", w[f"{e}.LayerNorm.bias"])],
             "embeddings", domain=MS, epsilon=eps)
    # The kernel's shape inference insists on its second output (a per-row mask length,
    # which Attention below does not use) being named.
    nodes[-1].output.append("embeddings.mask_index")

    layers = config["num_hidden_layers"]
    for i in range(layers):
        p = f"encoder.layer.{i}"
        a = f"{p}.attention.self"
        qkv_weight, qkv_bias = packed_qkv(w, p)
        x, qkv_weight = rescaled(h, f"{p}.attention", qkv_weight)
        # The raw [batch, sequence] mask rather than the optimizer's default per-row length:
        # it costs the CPU kernel the same and stays right whichever side the padding is on.
        ctx = node("Attention",
                   [x, const(f"{a}.qkv.weight", qkv_weight), const(f"{a}.qkv.bias", qkv_bias), mask],
                   f"{p}.attention", domain=MS, num_heads=heads)
        o = f"{p}.attention.output"
        proj = dense(ctx, f"{o}.dense")
        # The projection's bias rides along inside SkipLayerNormalization (residual add + norm).
        h = node("SkipLayerNormalization",
                 [proj, h, const(f"{o}.LayerNorm.weight", w[f"{o}.LayerNorm.weight"]),
                  const(f"{o}.LayerNorm.bias", w[f"{o}.LayerNorm.bias"]),
                  const(f"{o}.dense.bias", w[f"{o}.dense.bias"])],
                 f"{o}.LayerNorm", domain=MS, epsilon=eps)

        m = f"{p}.intermediate.dense"
        up = dense(h, m)
        # BiasGelu is the exact (erf) GELU BERT was trained with; FastGelu's tanh form is not.
        act = node("BiasGelu", [up, const(f"{m}.bias", w[f"{m}.bias"])], f"{p}.intermediate.gelu",
                   domain=MS, width=config["intermediate_size"])
        o = f"{p}.output"
        down = dense(act, f"{o}.dense")
        last = i == layers - 1
        h = node("SkipLayerNormalization",
                 [down, h, const(f"{o}.LayerNorm.weight", w[f"{o}.LayerNorm.weight"]),
                  const(f"{o}.LayerNorm.bias", w[f"{o}.LayerNorm.bias"]),
                  const(f"{o}.dense.bias", w[f"{o}.dense.bias"])],
                 "last_hidden_state" if last else f"{o}.LayerNorm", domain=MS, epsilon=eps)

    def tensor(name, elem, dims):
        return helper.make_tensor_value_info(name, elem, dims)

    # Same names, dtypes and symbolic axes as the int8 model Ferret shipped before.
    inputs = [tensor(n, TensorProto.INT64, ["batch", "sequence"])
              for n in ("input_ids", "attention_mask", "token_type_ids")]
    outputs = [tensor("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden])]
    infos = [i for i in infos if i.name != "last_hidden_state"]
    graph = helper.make_graph(nodes, "all-minilm-l6-v2", inputs, outputs, inits, value_info=infos)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)],
        producer_name="ferret xtask/src/export_minilm.py",
    )
    # The IR version the previous export had, so nothing older is needed to read this one.
    model.ir_version = 10
    # onnx's checker has no schemas for com.microsoft ops, but it still catches dangling
    # names and malformed initializers.
    onnx.checker.check_model(model)
    return model


def quantize(model, int8_path, reduce_range):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Only the weight matrices are quantized: embeddings and LayerNorms stay float, where int8
    # would cost accuracy and buy no speed; so do the outlier side products, whose whole
    # point is to stay float.
    keep_float = [n.name for n in model.graph.node if n.name.endswith(OUTLIER_MATMUL)]
    # The quantizer's advice to run its pre-processing first (shape inference and graph
    # fusion) is moot: every shape is declared and the graph is already fused.
    logging.getLogger().setLevel(logging.ERROR)
    quantize_dynamic(
        model, str(int8_path),
        op_types_to_quantize=["MatMul", "Attention"],
        nodes_to_exclude=keep_float,
        weight_type=QuantType.QInt8,
        # One scale per output column: with one per matrix the few large columns round the
        # rest away (measured: mean cosine 0.77 with seven-bit weights, 0.94 with eight).
        per_channel=True,
        reduce_range=reduce_range,
    )


def op_counts(path):
    return dict(Counter(n.op_type for n in onnx.load(str(path), load_external_data=False).graph.node))


def calibrate(config, w, tokenizer):
    """Per quantized layer: (outlier channels, smoothing scale per input channel or None)."""
    peaks = {}
    enc = tokenizer.encode_batch(CALIBRATION_TEXTS)
    ids = np.array([x.ids for x in enc], dtype=np.int64)
    mask = np.array([x.attention_mask for x in enc], dtype=np.int64)
    real = mask > 0

    def record(name, x):
        # Padding rows are left out: Ferret's pooling ignores them.
        peaks[name] = np.abs(x[real]).max(0)

    reference_hidden(config, w, ids, mask, np.zeros_like(ids), record=record)
    plan = {}
    for name, peak in peaks.items():
        if name.endswith(".attention"):
            weight = packed_qkv(w, name.removesuffix(".attention"))[0]
            row_peak = np.abs(weight).max(1)
            scale = (np.maximum(peak, 1e-5) ** SMOOTHING_ALPHA
                     / np.maximum(row_peak, 1e-5) ** (1 - SMOOTHING_ALPHA)).astype(np.float32)
            plan[name] = ([], scale)
        else:
            channels = np.flatnonzero(peak > OUTLIER_FACTOR * np.median(peak)).tolist()
            if channels:
                plan[name] = (channels, None)
    return plan


def tokenizer_for(model_dir):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    # The packaged tokenizer pads everything to 128; Ferret cuts at 256 and pads per batch.
    tok.no_padding()
    tok.enable_truncation(MAX_TOKENS)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    return tok


def export(model_dir, out_dir, reduce_range, rewrite):
    import onnxruntime

    config, weights = load_model(model_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    fp32_path, int8_path = out_dir / FUSED, out_dir / FUSED_INT8
    onnx.save(build_graph(config, weights), str(fp32_path))
    plan = calibrate(config, weights, tokenizer_for(model_dir)) if rewrite else {}
    quantize(build_graph(config, weights, plan), int8_path, reduce_range)
    print(json.dumps({
        "wrote": [{"path": str(p), "bytes": p.stat().st_size, "ops": op_counts(p)}
                  for p in (fp32_path, int8_path)],
        "quantization": {"weight_type": "QInt8", "per_channel": True,
                         "reduce_range": reduce_range,
                         "smoothed": sorted(k for k, v in plan.items() if v[1] is not None),
                         "float_outlier_channels": {k: v[0] for k, v in plan.items() if v[0]}},
        "onnx": onnx.__version__,
        "onnxruntime": onnxruntime.__version__,
        "numpy": np.__version__,
    }))


# ---------------------------------------------------------------------------------------
# The check: a plain numpy BERT as the reference
# ---------------------------------------------------------------------------------------

def erf(x):
    # numpy has no erf. Abramowitz & Stegun 7.1.26 is within 1.5e-7, about float32's own
    # rounding, so the reference stays a fair judge.
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-x * x))


def layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def reference_hidden(config, w, ids, mask, types, record=None):
    """BERT's forward pass as in the paper and in transformers' BertModel, in float32.
    `record(name, x)`, if given, sees the input of every projection the int8 graph quantizes,
    under the name build_graph() gives that layer."""
    record = record or (lambda name, x: None)
    eps = float(config["layer_norm_eps"])
    heads = config["num_attention_heads"]
    batch, seq = ids.shape
    e = "embeddings"
    x = (w[f"{e}.word_embeddings.weight"][ids]
         + w[f"{e}.position_embeddings.weight"][np.arange(seq)][None]
         + w[f"{e}.token_type_embeddings.weight"][types])
    x = layer_norm(x, w[f"{e}.LayerNorm.weight"], w[f"{e}.LayerNorm.bias"], eps)
    hidden = x.shape[-1]
    size = hidden // heads
    # Padded keys get no attention weight.
    bias = np.where(mask[:, None, None, :] > 0, 0.0, -1e9).astype(np.float32)

    def linear(x, name):
        return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    def split(t):
        return t.reshape(batch, seq, heads, size).transpose(0, 2, 1, 3)

    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        a = f"{p}.attention.self"
        record(f"{p}.attention", x)
        q, k, v = (split(linear(x, f"{a}.{n}")) for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(size)) + bias
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        probs = scores / scores.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
        o = f"{p}.attention.output"
        record(f"{o}.dense", ctx)
        x = layer_norm(linear(ctx, f"{o}.dense") + x, w[f"{o}.LayerNorm.weight"], w[f"{o}.LayerNorm.bias"], eps)
        record(f"{p}.intermediate.dense", x)
        up = linear(x, f"{p}.intermediate.dense")
        act = (0.5 * up * (1.0 + erf(up / np.float32(np.sqrt(2.0))))).astype(np.float32)
        o = f"{p}.output"
        record(f"{o}.dense", act)
        x = layer_norm(linear(act, f"{o}.dense") + x, w[f"{o}.LayerNorm.weight"], w[f"{o}.LayerNorm.bias"], eps)
    return x.astype(np.float32)


def pool(hidden, mask):
    # What Ferret does in Rust: mean over real tokens, then unit length.
    m = mask[..., None].astype(np.float32)
    v = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def check_texts(corpus):
    texts = []
    if corpus and corpus.exists():
        with corpus.open() as f:
            for line in f:
                doc = json.loads(line)
                texts.append(f"{doc.get('title', '')} {doc.get('text', '')}".strip())
                if len(texts) == 16:
                    break
    # Short queries next to long passages make each batch pad heavily, which is where a
    # mask bug would show.
    queries = ["what causes cerebral white matter damage in newborns?",
               "vitamin D",
               "Does aspirin reduce the risk of colorectal cancer?",
               "gene expression"]
    if not texts:
        return [queries]
    # One query per batch, so every batch mixes lengths.
    per = -(-len(texts) // len(queries))
    return [texts[j * per:(j + 1) * per] + [q] for j, q in enumerate(queries)]


def check(model_dir, out_dir, corpus):
    import onnxruntime as ort

    config, weights = load_model(model_dir)
    tok = tokenizer_for(model_dir)

    models = {"fused_fp32": out_dir / FUSED, "fused_int8": out_dir / FUSED_INT8,
              "previous_int8": model_dir / "model.int8.onnx"}
    sessions = {}
    for label, path in models.items():
        if path.exists():
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = 1
            opts.inter_op_num_threads = 1
            # What Ferret sets too, so the graph checked is the graph Ferret runs.
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            sessions[label] = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])

    cosines = {label: [] for label in sessions}
    lengths = []
    for batch in check_texts(corpus):
        enc = tok.encode_batch(batch)
        ids = np.array([x.ids for x in enc], dtype=np.int64)
        mask = np.array([x.attention_mask for x in enc], dtype=np.int64)
        types = np.zeros_like(ids)
        lengths.append(mask.sum(1).tolist())
        ref = pool(reference_hidden(config, weights, ids, mask, types), mask)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        for label, sess in sessions.items():
            # Feed only what each model asks for, as Ferret does.
            names = {i.name for i in sess.get_inputs()}
            hidden = sess.run(None, {k: v for k, v in feeds.items() if k in names})[0]
            cosines[label].extend((pool(hidden, mask) * ref).sum(1).tolist())

    report = {"texts": sum(len(b) for b in lengths), "token_lengths_per_batch": lengths}
    for label, values in cosines.items():
        report[label] = {"mean_cosine": float(np.mean(values)), "min_cosine": float(np.min(values))}
    print(json.dumps(report))
    ok = (report.get("fused_fp32", {}).get("min_cosine", 0) > 0.99999
          and report.get("fused_int8", {}).get("min_cosine", 0) > 0.995)
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--check", action="store_true",
                        help="compare the models in OUT_DIR (and MODEL_DIR/model.int8.onnx) "
                             "with a numpy reference instead of exporting")
    parser.add_argument("--corpus", type=Path,
                        help="BEIR corpus.jsonl whose first 16 passages join the check's queries")
    # Full-range int8 weights can saturate the 16-bit pair sums of AVX2's u8*s8 instruction on
    # CPUs without VNNI; seven-bit weights cannot. onnxruntime always quantizes Attention's
    # weights this way; by default the MatMuls get the same, since Ferret may run anywhere.
    parser.add_argument("--full-range", dest="reduce_range", action="store_false",
                        help="use all eight bits of the MatMul weights (safe only on CPUs with VNNI)")
    parser.add_argument("--no-rewrites", dest="rewrite", action="store_false",
                        help="quantize without the outlier split and smoothing: a few elementwise "
                             "passes fewer, at a cosine to float of about 0.993 instead of 0.997")
    args = parser.parse_args()
    if args.check:
        sys.exit(check(args.model_dir, args.out_dir, args.corpus))
    export(args.model_dir, args.out_dir, args.reduce_range, args.rewrite)


if __name__ == "__main__":
    main()
