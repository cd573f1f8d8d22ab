"""evalsite: honest experiments over LLMs, prompts and pipelines, published as a static site."""

__version__ = "0.1.0"
