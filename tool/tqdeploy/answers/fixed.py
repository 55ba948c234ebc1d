"""The check's fixed inputs, shipped as package data: the passage for perplexity (plain English prose written for
tqdeploy, ~1,000 tokens), the greedy prompts with their expected words, and the planted fact for recall."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache

from tqdeploy.resources import package_data

# The tokens of a prompt are unknown before the server tokenizes it; English BPE runs at 4.5 characters a token on
# the passage (1,026 tokens, 4,677 characters, SmolLM2's tokenizer). 3 characters a token keeps a context cut
# to fit max-model-len inside it for tokenizers that split finer.
CHARS_PER_TOKEN_LOW = 3.0


@dataclass(frozen=True)
class Prompt:
    id: str
    text: str
    expect: tuple[str, ...]


@dataclass(frozen=True)
class Recall:
    fact: str
    question: str
    expect: tuple[str, ...]
    depths: tuple[float, ...]
    max_tokens: int


@dataclass(frozen=True)
class Inputs:
    passage: str
    prompts: tuple[Prompt, ...]
    max_tokens: int
    recall: Recall
    repeat_question: str  # asked twice over the passage: uncached, then with its prefix cached
    repeat_max_tokens: int

    @property
    def passage_sha256(self) -> str:
        return hashlib.sha256(self.passage.encode("utf-8")).hexdigest()

    def paragraphs(self) -> list[str]:
        return [p.strip() for p in self.passage.split("\n\n") if p.strip()]

    def recall_prompt(self, depth: float, max_chars: int) -> str:
        """The passage's paragraphs with the fact planted at ``depth`` (0 = first, 1 = last), cut from the end to
        ``max_chars`` (max-model-len), then the question."""
        paras = self.paragraphs()
        head = "Read the story below and answer the question after it.\n\n"
        tail = "\n\nQuestion: " + self.recall.question
        room = max_chars - len(head) - len(tail) - len(self.recall.fact) - 2
        while paras and sum(len(p) + 2 for p in paras) > room:
            paras.pop()
        k = round(depth * len(paras))
        return head + "\n\n".join(paras[:k] + [self.recall.fact] + paras[k:]) + tail

    def repeat_prompt(self, max_chars: int) -> str:
        """The passage (cut from the end to ``max_chars``) and a question whose answer runs to max_tokens."""
        tail = "\n\nQuestion: " + self.repeat_question
        return self.passage[: max(0, max_chars - len(tail))].rstrip() + tail


@lru_cache(maxsize=1)
def load_inputs() -> Inputs:
    folder = package_data("tqdeploy.answers", "data")
    passage = (folder / "passage.txt").read_text(encoding="utf-8").strip() + "\n"
    data = json.loads((folder / "prompts.json").read_text(encoding="utf-8"))
    r = data["recall"]
    return Inputs(
        passage,
        tuple(Prompt(p["id"], p["prompt"], tuple(p["expect"])) for p in data["prompts"]),
        int(data["max_tokens"]),
        Recall(
            r["fact"], r["question"], tuple(r["expect"]), tuple(float(d) for d in r["depths"]), int(r["max_tokens"])
        ),
        str(data["repeat"]["question"]),
        int(data["repeat"]["max_tokens"]),
    )
