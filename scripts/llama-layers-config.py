#!/usr/bin/python3
"""A config.json of LAYERS llama layers: tests/models/hf_configs/llama-small-tied.json with num_hidden_layers set,
for measuring what one request costs at the graph's node limit (docs/FUZZING.md: 10,000 layers are 260,004 nodes).

  /usr/bin/python3 scripts/llama-layers-config.py LAYERS OUT.json
"""
import json
import os
import sys


def main():
    if len(sys.argv) != 3 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
        sys.exit("usage: llama-layers-config.py LAYERS OUT.json (LAYERS a positive integer)")
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "tests", "models", "hf_configs", "llama-small-tied.json")) as source:
        config = json.load(source)
    config["num_hidden_layers"] = int(sys.argv[1])
    with open(sys.argv[2], "w") as out:
        json.dump(config, out, indent=2)


if __name__ == "__main__":
    main()
