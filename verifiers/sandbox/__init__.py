"""Sandboxes for untrusted candidate code, driven from the trainer's process.

`isolation.py` decides what isolation this machine gives (bubblewrap namespaces, or rlimits only), `uids.py` hands
each sandbox a uid of its own, `process.py` is what every sandboxed process has (limits, pipes, start report),
`pool.py` keeps warm sandboxes started ahead, and `fork.py` is the client of the fork server that forks candidates
inside one long-lived sandbox. What runs inside the sandbox lives in `../code/standalone/`.
"""
