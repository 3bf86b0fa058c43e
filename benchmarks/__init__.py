"""Side-by-side benchmark of argentic-tools against a raw aiomqtt floor and argentic 0.16.

Run it with ``python -m benchmarks.run`` (or ``argentic-tools bench``); see README.md.
"""
