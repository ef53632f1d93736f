"""Alignment against the number of samples N (`platobench scaling-n`).

Koepke, Zverev, Ginosar & Efros ("Back into Plato's Cave", 2026) found that mutual-kNN alignment falls
as N grows; PRH's protocol measures one point, N = 1,024. This package measures the curve: one
metric on log-spaced random subsets of one paired set (`curve.real_curve`), continued past the set's
size by synthetic features with a known shared latent (`synthetic.latent_pair`, labelled synthetic),
with intervals over draws, written as JSON, Markdown and a plot (`report`).
"""
