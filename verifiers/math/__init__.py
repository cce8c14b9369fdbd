"""The `math` verifier: is a completion's final answer equal to the reference?

`verifier.py` runs in the trainer's process: `extract.py` (find the answer) and `normalize.py` (canonical LaTeX) are
pure string work, and `numbers.py` decides plain numbers without sympy. What needs sympy runs in the deadline workers
(`../core/deadline_pool.py`): `compare.py` and its pieces, `structure.py` (lists, intervals, relations), `parse.py`
(LaTeX to sympy), `expressions.py` (equality of values), `points.py` (numeric sampling), `relations.py` (equations and
sets), and `warmup.py` (each worker's warm-up). A worker enters through `worker.py` (what the pool sends it, by
reference), so that it loads none of the trainer's side.
"""
