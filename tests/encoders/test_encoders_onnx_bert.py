"""paraphrase-MiniLM-L3-v2 ONNX -> transformers BertModel: strict load, the same numbers as onnxruntime on
real sentences at every layer, and a prepared folder that loads through hf_text with mean pooling."""

import numpy as np
import pytest
import torch

from platobench.encoders import load_encoder, packaged
from platobench.encoders.onnx_bert import bert_state_dict, build_bert
from platobench.zoo import load_zoo

SENTENCES = [
    "A man is playing a guitar on stage.",
    "Someone performs music with a guitar.",
    "A dog runs across the grassy field.",
    "A puppy is running on the lawn.",
    "The stock market fell sharply today.",
]
LAYER_OUTPUT = "/model/model.0/auto_model/{}/LayerNorm/LayerNormalization_output_0"
SENTENCE_OUTPUT = "461"  # the export's mean-pooled sentence embedding, [B, 384]


@pytest.fixture(scope="module")
def onnx_path():
    return packaged.part_files(packaged.ASSETS["minilm-l3"])[0]


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(packaged.part_files(packaged.ASSETS["minilm-l6"])[0].parent)


def test_shapes_match_minilm_l3_h384(onnx_path):
    state, facts = bert_state_dict(onnx_path)
    assert facts == {
        "vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 3, "intermediate_size": 1536,
        "max_position_embeddings": 512, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
    }
    assert state["encoder.layer.2.output.dense.weight"].shape == (384, 1536)  # nn.Linear layout (transposed)
    assert not any(k.startswith("pooler.") for k in state)  # the export has no pooler


@pytest.mark.slow
def test_rebuilt_model_matches_onnxruntime_on_real_sentences(onnx_path, tokenizer):
    import onnx
    import onnxruntime as ort

    model = build_bert(onnx_path)  # load_state_dict(strict=True) inside
    assert len(tokenizer) == model.config.vocab_size == 30522  # the borrowed tokenizer fits the embedding table
    graph = onnx.load(str(onnx_path))
    names = [LAYER_OUTPUT.format("embeddings")] + [LAYER_OUTPUT.format(f"encoder/layer.{i}/output") for i in range(2)]
    names = [*names, "onnx::Shape_422"]  # the last layer's norm output keeps the exporter's name
    for name in names[:-1]:
        graph.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    session = ort.InferenceSession(graph.SerializeToString(), providers=["CPUExecutionProvider"])
    batch = tokenizer(SENTENCES, padding=True, return_tensors="np")
    *reference, sentence = session.run(names + [SENTENCE_OUTPUT], {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]})
    with torch.inference_mode():
        out = model(input_ids=torch.from_numpy(batch["input_ids"]), attention_mask=torch.from_numpy(batch["attention_mask"]),
                    output_hidden_states=True)
    mask = batch["attention_mask"][..., None].astype(bool)
    for ours, ref in zip(out.hidden_states, reference):
        assert ours.shape == ref.shape == (len(SENTENCES), batch["input_ids"].shape[1], 384)
        assert np.abs(np.where(mask, ours.numpy() - ref, 0)).max() < 1e-5  # measured 2.4e-6 (float32 op order)
    last = out.last_hidden_state.numpy()
    pooled = (last * mask).sum(1) / mask.sum(1)
    assert np.abs(pooled - sentence).max() < 1e-5  # measured 5.4e-7


@pytest.mark.slow
def test_prepared_folder_loads_through_hf_text_and_ranks_paraphrases(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = packaged.prepare("minilm-l3", tmp_path)
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "modules.json"} <= {
        p.name for p in folder.iterdir()}
    spec = load_zoo().get("demo/minilm-l3")
    enc = load_encoder(spec, home=tmp_path)
    assert type(enc.model).__name__ == "BertModel" and enc.spec.pooling == "avg"
    assert len(enc.layer_ids) == spec.num_layers + 1 == 4 and enc.widths == [384] * 4 and enc.max_length == 128
    feats = torch.nn.functional.normalize(enc.encode(enc.tokenize(SENTENCES))[-1], dim=-1)
    sim = feats @ feats.T
    assert min(sim[0, 1], sim[2, 3]) > 0.5  # measured .66, .67
    assert max(sim[0, 2], sim[0, 4], sim[1, 3], sim[2, 4], sim[3, 4]) < 0.2  # unrelated pairs: measured <= .08
