"""Safe file handling shared by every stage: atomic writes, the naming rule for ids that become paths,
and YAML reading that refuses expansion bombs."""
