"""What every verifier shares, in the trainer's process: the contract (`contract.py`), the registry, the adapter to a
TRL reward function (`reward.py`) and the pool of warm worker processes with a deadline per item (`deadline_pool.py`).
"""
