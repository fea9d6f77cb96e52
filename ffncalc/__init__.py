"""ffncalc: exact parameter and FLOP counts for transformer language models."""

__version__ = "0.1.0"
