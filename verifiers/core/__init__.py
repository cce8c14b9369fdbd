"""What every verifier shares, in the trainer's process: the contract (`contract.py`: `VerificationResult`,
`Verifier`), the registry (`registry.py`: `register_verifier`, `get_verifier`, the entry-point group), the adapter to a
TRL reward function (`reward.py`, and `completions.py`: the text of a completion) and the pool of warm worker processes with a deadline per item (`deadline_pool.py`).
"""
