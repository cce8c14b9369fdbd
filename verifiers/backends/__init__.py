"""Where a verifier runs: in this process and its workers (local), or split across Ray actors (`ray.py`)."""
