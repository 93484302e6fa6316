"""ptlint's rules, one module per rule (installed as `ptlint.rules`).

Each module holds one `Rule` subclass with its code, name, documentation and the examples that
must and must not trigger it; `ptlint.engine.registry` finds them all.
"""
