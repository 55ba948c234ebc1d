"""The check's fixed inputs, shipped as package data: the passage for perplexity (plain English prose written for
tqdeploy, ~1,000 tokens), the greedy prompts with their expected words, and the planted fact for recall."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache

from tqdeploy.resources import package_data

# A long prompt must fit max-model-len before the server has tokenized it. The perplexity probe tells how many
# tokens the passage is on this server's tokenizer: its characters per token, less a tenth for the other text
# (English BPE: 4.5 on the passage with SmolLM2's tokenizer; a 512-token test vocabulary: about 2). When the passage
# was cut to fit, that figure is unknown and 1 is the safe one: every token of ASCII text is at least a character.
SAFETY = 0.9
PROMPT_OVERHEAD_TOKENS = 64  # the chat template (SmolLM2's system prompt is ~20 tokens) and the question


def chars_per_token(passage_chars: int, scored: int, cut: bool) -> float:
    """Characters per token of the passage on the server's tokenizer (``scored`` tokens after the first)."""
    if cut or scored <= 0:
        return 1.0
    return max(1.0, SAFETY * passage_chars / (scored + 1))


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
