"""The cells the sandbox runs in a kernel around learner code -- the bootstrap
that snapshots the grader, the verify cell that reports changes -- and
reading what they print.

``autograder.sandbox.integrity`` re-exports every name here.
"""
from __future__ import annotations

import json
import types


def bootstrap_source(token: str, *, hidden_dirs: list[str], include_tf: bool, allow: list[str] = (),
                     writable: list[str] = ()) -> str:
    """The first cell a sandboxed kernel runs, before any learner code."""
    return (
        "def _autograder_bootstrap():\n"
        "    import builtins\n"
        "    import json\n"
        "    from autograder.sandbox import integrity\n"
        f"    traces_set = integrity.install_guards({list(hidden_dirs)!r}, allow={list(allow)!r}, "
        f"writable={list(writable)!r})\n"
        f"    snap = integrity.take_snapshot(include_tf={include_tf!r}, shell=get_ipython())\n"
        "    snap.hooks['traces_set'] = traces_set\n"
        "    ns = get_ipython().user_ns\n"
        "    def report(names=None, freeze=None, label=''):\n"
        "        if freeze is not None:\n"
        "            snap.freeze(ns, freeze, label)\n"
        "        return json.dumps(snap.problems(ns, names))\n"
        f"    builtins.__dict__['_autograder_{token}'] = report\n"
        "    snap.builtins = dict(vars(builtins))\n"
        "    profile = None\n"
        f"    if {include_tf!r}:\n"
        "        from autograder.checks.hardware import current_profile\n"
        "        try:\n"
        "            profile = current_profile().to_dict()\n"
        "        except Exception as exc:\n"
        "            profile = {'name': 'unknown', 'error': str(exc)}\n"
        "    # Last, so that nothing above runs under it; still before any learner cell.\n"
        "    from autograder.checks import kernel_guard\n"
        f"    snap.hooks['refused'] = kernel_guard.install(learner_dirs={list(writable)!r})\n"
        f"    print({token!r} + 'ready' + json.dumps(profile) + '\\n', end='', flush=True)  # one write\n"
        "_autograder_bootstrap()\n"
        "del _autograder_bootstrap\n"
    )


def verify_source(token: str, names: list[str] | None = None, *, freeze: list[str] | None = None,
                  label: str = "") -> str:
    """A cell that prints the integrity report after ``token`` (no names left behind).

    With ``freeze``, it first records what those names refer to: the locked
    cell ``label`` (or a test cell) just bound them."""
    return (f"print({token!r} + __import__('builtins').__dict__['_autograder_{token}']({names!r}, "
            f"{freeze!r}, {label!r}) + '\\n', end='', flush=True)\n")


def global_names(source: str) -> list[str] | None:
    """Every name a cell's code could look up globally (None if it does not compile)."""
    try:
        code = compile(source, "<test>", "exec")
    except (SyntaxError, ValueError):
        return None
    found: set[str] = set()
    stack = [code]
    while stack:
        current = stack.pop()
        found.update(current.co_names)
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return sorted(found)


def parse_report(text: str, token: str) -> list[str]:
    """The problems a verify cell printed; a missing or garbled answer is itself a problem."""
    from autograder.sandbox.scoring import after_token

    found = after_token(text, token)
    problems = json.loads(found) if found is not None else None
    if isinstance(problems, list):
        return [str(p) for p in problems]
    return ["the grader's integrity check did not answer (print, builtins or the kernel's output were changed)"]


def message(problems: list[str]) -> str:
    """The one-line feedback for a test that found the grader tampered with."""
    shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
    return (f"integrity: {shown}. What the exercise's locked cells define, the grader's clock and checks, "
            "and the functions they use must stay as given; remove the code that changes them and resubmit")
