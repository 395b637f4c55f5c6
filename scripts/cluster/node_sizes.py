"""Ranks per node of a topology YAML, one line per node in rank order (nodes with `count`
expanded; a device given as a bare type name counts one), for scripts/cluster/mpirun.sh.

    node_sizes.py TOPOLOGY
"""
import sys

import yaml

for node in yaml.safe_load(open(sys.argv[1]))["nodes"]:
    ranks = sum(1 if isinstance(d, str) else d.get("count", 1) for d in node["devices"])
    for _ in range(node.get("count", 1)):
        print(ranks)
