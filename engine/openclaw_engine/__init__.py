"""Reference policy engine and trainer.

SGLang's HTTP subset and OpenClaw-RL's losses on torch + transformers.
"""

__version__ = "0.1.0"
