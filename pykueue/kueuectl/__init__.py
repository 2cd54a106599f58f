"""``kubectl kueue``: pykueue's kubectl plugin, a Python kueuectl (Kueue v0.19.2's CLI).

Same commands, flags, output and errors as kueuectl: ``create``, ``list``, ``stop`` and
``resume`` of queues and Workloads, ``get|describe|edit|patch|delete`` handed to kubectl,
``version`` and ``completion``. ``main`` wires the command tree; ``cli`` parses command lines
with kueuectl's rules; ``commands/`` holds one module per command group; ``printers/``
writes tables, JSON, YAML, KYAML and JSONPath byte for byte as kubectl does; ``gotypes`` knows how
kueuectl's Go types print; ``kubeconfig`` and ``transport`` reach the API server.
"""
