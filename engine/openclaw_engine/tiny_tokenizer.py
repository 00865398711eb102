"""The tiny model's tokenizer: a byte-level BPE trained in code, deterministically, on a pinned corpus.

OpenClaw's system prompt and tool schemas are ~58 kB; over bare bytes that is ~53k tokens, which no small
context holds and every turn re-prefills. A real BPE makes it about 3.4x shorter, so the tokenizer is trained
here with Hugging Face `tokenizers` instead of being a byte table.

The corpus is the Python source of `transformers` itself: the top-level modules and `generation/` of the exact
version the engine pins (`transformers==5.24.0` in pyproject.toml; the files come from its wheel, so they are
byte-identical on every machine and in the engine image). It is mostly English prose in docstrings with
markdown, code, paths and JSON-like structures, which is what an agent's prompt is made of; it needs no
download, and pinning both `transformers` and `tokenizers` makes the trained merges a pure function of the
code.
The files are read in sorted order and the BPE trainer is deterministic (it breaks count ties by pair order),
so the same folder comes out on every run, whatever the thread count.

Shape as in Qwen2/Qwen3: Qwen's pre-tokenizer split (single digits, words with one leading non-letter, runs
of punctuation, newlines), then GPT-2's byte-level mapping, all 256 bytes in the base alphabet (every string
encodes), no normaliser (decode(encode(text)) == text exactly), and the chat control and markup tokens added
after the learned vocabulary.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import transformers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

# Control tokens: `special=True` ones are stripped by skip_special_tokens; the markup tokens stay
# visible in decoded text (as in Qwen3) so reasoning / tool-call parsers can see them.
SPECIAL_TOKENS: tuple[str, ...] = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
MARKUP_TOKENS: tuple[str, ...] = (
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
)

# Learned entries (256 byte symbols + merges); the added tokens come after them.
BPE_VOCAB_SIZE = 16384
# Qwen2/Qwen3's pre-tokenizer pattern (tokenizer.json of Qwen/Qwen3-*), applied before the byte mapping.
QWEN_SPLIT_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
CONTEXT_LENGTH = 131072


@dataclass(frozen=True)
class Corpus:
    texts: list[str]
    description: str
    sha256: str  # over the relative paths and contents, recorded in the model folder


def training_corpus() -> Corpus:
    """The installed `transformers` package's top-level modules and `generation/`, in sorted path order."""
    root = Path(transformers.__file__).parent
    files = sorted(root.glob("*.py")) + sorted((root / "generation").rglob("*.py"))
    digest = hashlib.sha256()
    texts: list[str] = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(root).as_posix()
        digest.update(rel.encode() + b"\0" + text.encode() + b"\0")
        texts.append(text)
    return Corpus(
        texts=texts,
        description=f"transformers {transformers.__version__}: *.py, generation/**/*.py ({len(files)} files)",
        sha256=digest.hexdigest(),
    )


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable-character map used by the ByteLevel pre-tokenizer."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(printable, chars, strict=True)}


def train_tokenizer(corpus: Corpus, *, vocab_size: int = BPE_VOCAB_SIZE) -> PreTrainedTokenizerFast:
    """Train the byte-level BPE on `corpus` and wrap it with Qwen3's special tokens and chat template."""
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN_SPLIT_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(corpus.texts, trainer=trainer)
    core.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    core.add_tokens([AddedToken(t, special=False, normalized=False) for t in MARKUP_TOKENS])

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        clean_up_tokenization_spaces=False,
        model_max_length=CONTEXT_LENGTH,
    )
    tokenizer.chat_template = (resources.files("openclaw_engine") / "chat_template.jinja").read_text()
    return tokenizer


def build_tokenizer() -> PreTrainedTokenizerFast:
    """The tiny model's tokenizer, trained on the pinned corpus (what `make-tiny-model` writes)."""
    return train_tokenizer(training_corpus())
