"""queryeval: evaluate LLM systems that turn questions into queries and answers.

The public API lives in the subpackages (`queryeval.metrics`, `queryeval.cases`, ...);
importing the package itself is cheap and touches no network.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
