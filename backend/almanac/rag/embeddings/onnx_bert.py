"""A BERT sentence encoder run by ONNX Runtime, on the same safetensors weights as `bert.py`.

`build_graph` writes the encoder as an ONNX graph in memory (no file, no PyTorch, no download): the
word/position embeddings and their layer norm in standard ONNX ops, then per layer ONNX Runtime's fused
CPU kernels (`com.microsoft` `Attention`, `SkipLayerNormalization`, `BiasGelu` — exact erf GELU, as BERT
uses), then attention-masked mean pooling and L2 normalisation. `OnnxBert` runs it.

Agreement with the numpy forward pass is checked by tests (cosine ≥ 0.9999 against sentence-transformers'
reference vectors; about 1e-7 from numpy in practice). Speed on 2 cores: see `bench/embeddings.py`.
Both `onnx` (to write the graph) and `onnxruntime` must be importable; `available()` says whether they are.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from almanac.rag.embeddings.base import EmbeddingError

_CONTRIB = "com.microsoft"
Array = npt.NDArray[np.float32]


def available() -> bool:
    """Whether ONNX Runtime and the `onnx` package can both be imported."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def build_graph(model_dir: Path) -> bytes:
    """The serialised ONNX model of the BERT encoder in `model_dir` (config.json + model.safetensors),
    with inputs `input_ids`, `attention_mask` (int64, batch × length) and output `embedding` (float32,
    batch × hidden, unit rows). EmbeddingError unless it is a BERT with exact GELU and absolute positions."""
    from onnx import TensorProto, helper
    from safetensors.numpy import load_file

    config = json.loads((model_dir / "config.json").read_text())
    if config.get("hidden_act") != "gelu" or config.get("position_embedding_type", "absolute") != "absolute":
        raise EmbeddingError("The local embedding model has an unsupported configuration.")
    weights = load_file(str(model_dir / "model.safetensors"))
    graph = _Graph()
    eps = float(config["layer_norm_eps"])
    word = graph.weight("word", weights["embeddings.word_embeddings.weight"])
    positions = graph.weight(
        "positions",
        weights["embeddings.position_embeddings.weight"] + weights["embeddings.token_type_embeddings.weight"][0],
    )
    graph.constant("zero", np.array(0, dtype=np.int64))
    graph.constant("one", np.array(1, dtype=np.int64))
    graph.node("Shape", ["input_ids"], ["shape"])
    graph.node("Gather", ["shape", "one"], ["length"], axis=0)
    graph.node("Range", ["zero", "length", "one"], ["position_ids"])
    graph.node("Gather", [word, "input_ids"], ["words"])
    graph.node("Gather", [positions, "position_ids"], ["places"])
    graph.node("Add", ["words", "places"], ["embedded"])
    ln_g = graph.weight("emb_ln_g", weights["embeddings.LayerNorm.weight"])
    ln_b = graph.weight("emb_ln_b", weights["embeddings.LayerNorm.bias"])
    graph.node("LayerNormalization", ["embedded", ln_g, ln_b], ["x0"], axis=-1, epsilon=eps)
    graph.node("Cast", ["attention_mask"], ["mask_i32"], to=TensorProto.INT32)
    x = "x0"
    for i in range(int(config["num_hidden_layers"])):
        x = _layer(graph, weights, i, x, heads=int(config["num_attention_heads"]), eps=eps)
    _mean_pool(graph, x)
    model = helper.make_model(
        helper.make_graph(
            graph.nodes,
            "sentence-bert",
            [
                helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "length"]),
                helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "length"]),
            ],
            [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", int(config["hidden_size"])])],
            graph.initializers,
        ),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(_CONTRIB, 1)],
    )
    model.ir_version = 8
    return bytes(model.SerializeToString())


class _Graph:
    """Nodes and initializers being collected for one ONNX graph."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []

    def weight(self, name: str, array: npt.ArrayLike) -> str:
        return self.constant(name, np.ascontiguousarray(array, dtype=np.float32))

    def constant(self, name: str, array: np.ndarray) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def node(self, op: str, inputs: list[str], outputs: list[str], *, domain: str = "", **attributes: Any) -> None:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, outputs, domain=domain or None, **attributes))


def _layer(graph: _Graph, weights: dict[str, np.ndarray], i: int, x: str, *, heads: int, eps: float) -> str:
    """One transformer layer over `x`; returns the name of its output."""
    p, s = f"encoder.layer.{i}.", f"encoder.layer.{i}.attention.self."

    def w(name: str, transpose: bool = False) -> str:
        array = weights[p + name]
        return graph.weight(f"l{i}.{name}", array.T if transpose else array)

    qkv_w = graph.weight(
        f"l{i}.qkv_w", np.concatenate([weights[s + f"{n}.weight"].T for n in ("query", "key", "value")], axis=1)
    )
    qkv_b = graph.weight(f"l{i}.qkv_b", np.concatenate([weights[s + f"{n}.bias"] for n in ("query", "key", "value")]))
    graph.node("Attention", [x, qkv_w, qkv_b, "mask_i32"], [f"l{i}.context"], domain=_CONTRIB, num_heads=heads)
    graph.node("MatMul", [f"l{i}.context", w("attention.output.dense.weight", True)], [f"l{i}.projected"])
    graph.node(
        "SkipLayerNormalization",
        [
            f"l{i}.projected",
            x,
            w("attention.output.LayerNorm.weight"),
            w("attention.output.LayerNorm.bias"),
            w("attention.output.dense.bias"),
        ],
        [f"l{i}.attended"],
        domain=_CONTRIB,
        epsilon=eps,
    )
    graph.node("MatMul", [f"l{i}.attended", w("intermediate.dense.weight", True)], [f"l{i}.inner"])
    graph.node("BiasGelu", [f"l{i}.inner", w("intermediate.dense.bias")], [f"l{i}.activated"], domain=_CONTRIB)
    graph.node("MatMul", [f"l{i}.activated", w("output.dense.weight", True)], [f"l{i}.ffn"])
    graph.node(
        "SkipLayerNormalization",
        [
            f"l{i}.ffn",
            f"l{i}.attended",
            w("output.LayerNorm.weight"),
            w("output.LayerNorm.bias"),
            w("output.dense.bias"),
        ],
        [f"l{i}.out"],
        domain=_CONTRIB,
        epsilon=eps,
    )
    return f"l{i}.out"


def _mean_pool(graph: _Graph, x: str) -> None:
    """`embedding` ← the L2-normalised mean of `x` over the tokens the attention mask keeps."""
    graph.constant("axis1", np.array([1], dtype=np.int64))
    graph.constant("axis2", np.array([2], dtype=np.int64))
    graph.node("Cast", ["attention_mask"], ["mask_f"], to=1)  # FLOAT
    graph.node("Unsqueeze", ["mask_f", "axis2"], ["mask_3d"])
    graph.node("Mul", [x, "mask_3d"], ["kept"])
    graph.node("ReduceSum", ["kept", "axis1"], ["summed"], keepdims=0)
    graph.node("ReduceSum", ["mask_f", "axis1"], ["count"], keepdims=1)
    graph.node("Div", ["summed", "count"], ["mean"])
    graph.node("LpNormalization", ["mean"], ["embedding"], axis=-1, p=2)


class OnnxBert:
    """An ONNX Runtime session over `build_graph(model_dir)`; safe to call from several threads at once."""

    def __init__(self, model_dir: Path, *, threads: int | None = None) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or _cpu_count()
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(build_graph(model_dir), options, providers=["CPUExecutionProvider"])

    def embed_tokens(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.float32]) -> Array:
        """Sentence embeddings (batch, hidden), unit length, for padded token ids and their 0/1 mask."""
        outputs = self.session.run(["embedding"], {"input_ids": ids, "attention_mask": mask.astype(np.int64)})
        return np.asarray(outputs[0], dtype=np.float32)


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
