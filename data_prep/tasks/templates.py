"""``PromptTemplate``: one (question, instruction) pair of a task (paper Tab. 6, A.2, B.1/B.2).

The paper evaluates each task with "up to ~5 different prompts" and shows that accuracy moves with the
prompt (Tab. 12), so every task has at least five (question, instruction) pairs; a generator picks one
deterministically from (seed, task, record key) and records its index as ``template_id``. A built-in task's
templates are data in its ``<task>.yaml`` (``templates:``), so wording changes never touch generator logic;
the option phrasings a generator composes (COT's event orders, CAT's bindings) are constants of its module.

Instructions never name an option letter: CircularEval rotates the options, and an instruction saying
"answer (E)" would then point at the wrong one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PromptTemplate:
    question: str  # may contain {question}: the source question (QA tasks)
    instruction: str  # appended in the instruction setting only (paper B.1)
