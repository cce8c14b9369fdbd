"""The `code` verifier: a completion's Python against hidden unit tests, in a sandbox, judged by a separate process.

Four kinds of process take part; each folder holds the code of one side:

- the trainer's process (this folder): `verifier.py` (the registered `CodeVerifier`), `formats.py` (a dataset's test
  column as a job), `runner.py` (one candidate through a sandbox and the judge);
- the sandbox (`../sandbox/` starts and isolates it) and the judge: `standalone/`, scripts that run outside the
  package, standard library only (its `__init__` states the rule).
"""
