"""The `code` verifier: a completion's Python against hidden unit tests, in a sandbox, judged by a separate process.

Four kinds of process take part; each folder holds the code of one side:

- the trainer's process (this folder): `verifier.py` (the registered `CodeVerifier`; `options.py`, what each of its
  options means), `extract.py` (the program a completion holds, and its language), `formats.py` (a dataset's test
  column as a job), `runner.py` (one candidate through a sandbox and the judge), `clock.py` (its time), `outputs.py`
  (a stdio output against the expected one), `native.py` and `programs.py` (C++ programs, checkers, and the compiled
  programs kept on disk);
- the sandbox (`../sandbox/` starts and isolates it) and the judge: `standalone/`, scripts that run outside the
  package, standard library only (its `__init__` states the rule).
"""
