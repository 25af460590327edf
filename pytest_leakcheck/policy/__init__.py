"""leakcheck.yaml -> Policy: the bounded YAML reader, the schema, group rules. No numpy, no Pillow."""
