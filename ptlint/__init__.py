"""ptlint: a linter for PyTorch code that finds what makes training slow or numerically unsafe."""

__version__ = "0.1.0"
