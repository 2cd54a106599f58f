"""Output as kubectl writes it: tables, JSON, YAML, KYAML, names and JSONPath."""
