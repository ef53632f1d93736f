"""Experiments built beside the benchmark core, each a command of its own:

- `jepa`: train text JEPAs on caption views and measure their alignment (`platobench jepa ...`);
- `stitch`: caption a frozen vision encoder through a rotation into a text decoder (`platobench stitch`);
- `theory`: the synthetic worlds of the PRH-for-JEPAs theorem (`platobench theory ...`);
- `scaling`: alignment against the number of samples N (`platobench scaling-n`).

They use the core only through `platobench.api` (the layering test enforces it), and the core never
imports them: it names their commands and the stitch record's verifier as lazy registry targets.
"""
