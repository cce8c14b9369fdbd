"""What every verifier shares, in the trainer's process: the contract (`contract.py`: `VerificationResult`,
`Verifier`), the registry (`registry.py`: `register_verifier`, `get_verifier`, the entry-point group; `plugins.py`: the
`Registry` of every kind of plug-in, the trainer's estimators too), the adapter to a
TRL reward function (`reward.py`; `completions.py`: the text of a completion; `failures.py`: its warnings and stop) and
the pool of warm worker processes with a deadline per item (`deadline_pool.py`; the state of one `map` call in
`deadline_pool_batch.py`, the parent's handle on a worker in `deadline_pool_handle.py`, and what runs inside a worker,
in the worker's own process, in `deadline_pool_worker.py`).
"""
