"""What a process of the package has imported, for the test of each kind of process (tests/test_process_imports.py).

Standard library only: a math worker imports this module to run `loaded_modules`, and must find nothing else here.
"""

from __future__ import annotations

import sys

PACKAGE = "trl_grpo_ext"
# Top-level names that site's .pth hooks install before any program runs: not libraries a program imported.
SITE_HOOKS = ("_distutils_hack", "__editable__")


def loaded_modules() -> list[str]:
    """Every module this process has imported so far (run in a math worker through its pool)."""
    return sorted(sys.modules)


def package_modules(modules: list[str]) -> set[str]:
    return {m for m in modules if m == PACKAGE or m.startswith(PACKAGE + ".")}


def third_party(modules: list[str], own: set[str] = frozenset()) -> set[str]:
    """The top-level names of `modules` that are neither the standard library, nor this package, nor `own` (a
    script's neighbours loaded by bare name, the candidate's module), nor a site hook, nor `__main__`."""
    standard = set(sys.stdlib_module_names) | set(sys.builtin_module_names)
    tops = {m.partition(".")[0] for m in modules}
    return {
        top for top in tops - standard - own - {PACKAGE, "__main__", "__mp_main__"} if not top.startswith(SITE_HOOKS)
    }
