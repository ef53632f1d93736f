"""Stitching (`platobench stitch`): a frozen vision encoder, one semi-orthogonal linear map into a frozen text
encoder's embedding space and a caption decoder trained on text only, scored by captioning held-out images
(CIDEr-D, BLEU-4) next to map controls, retrieval and the text->text upper bound. See run.py for the flow."""
