"""Where a verifier runs, chosen by `get_verifier(..., backend=...)`: in this process and its own workers
(`local.py`), or each batch split across Ray actors (`ray.py`). Backends depend on `core/contract.py` only.
"""
