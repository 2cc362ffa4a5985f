"""The chat model I/O's rows carry the tokens TRL's own ``DPOTrainer`` (TRL 1.16) trains on (issue 57, item 8).

``cavpref.models.chat.ChatModelIO.collate`` is the one row / tokenisation path of every method. The reference is a
real ``trl.DPOTrainer`` given the same rows in TRL's conversational format (the same system prompt, question and
answers) and the same processor: its tokenised dataset (``prompt_ids`` / ``chosen_ids`` / ``rejected_ids``) must
equal our rows' ids, with our labels on exactly its completion tokens (the answer, ``<|im_end|>`` and the newline
after it), and its ``compute_loss`` on its own collated batch must equal the loss ``CAVPrefTrainer`` computes from
our rows' log-probs, for IPO (which divides by the token count), sigmoid DPO and sigmoid + SFT."""

from __future__ import annotations

import copy

import pytest
import torch
from datasets import Dataset
from trl import DPOConfig, DPOTrainer

from cavpref.models.base import IGNORE_INDEX, Row

pytestmark = pytest.mark.usefixtures("one_thread")

QUESTION = "Which instrument is playing?"
# answers of several shapes: one word, several, a leading space, digits, a line break, a leading line break
# (its newline merges with the prompt's last one: TRL then starts the completion one token early)
PAIRS = [
    ("a violin", "a cello"),
    ("None of the above", "a flute"),
    ("yes", "no"),
    (" 3 drums", "2 drums"),
    ("a violin\nthen a drum", "(B) a drum"),
    ("\nthe violin", "the cello"),
]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from cavpref.models import AVModelArguments, load_model_io
    from cavpref.models.tiny import build_tiny_qwen_omni

    folder = build_tiny_qwen_omni(tmp_path_factory.mktemp("trl_tokens") / "thinker")
    model_io = load_model_io(AVModelArguments(model_name_or_path=str(folder), dtype="float32"))
    ref = model_io.model
    policy = copy.deepcopy(ref)
    torch.manual_seed(0)
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model_io, policy.train(), ref.eval()


def trl_rows(model_io) -> list[dict]:
    system = {"role": "system", "content": model_io.system_prompt}
    return [
        {
            "prompt": [system, {"role": "user", "content": QUESTION}],
            "chosen": [{"role": "assistant", "content": c}],
            "rejected": [{"role": "assistant", "content": r}],
        }
        for c, r in PAIRS
    ]


def trl_trainer(setup, tmp_path, **options) -> DPOTrainer:
    model_io, policy, ref = setup
    args = DPOConfig(
        output_dir=str(tmp_path / "trl"),
        per_device_train_batch_size=len(PAIRS),
        beta=0.5,
        report_to="none",
        use_cpu=True,
        bf16=False,
        disable_tqdm=True,
        **options,
    )
    return DPOTrainer(
        copy.deepcopy(policy),
        ref_model=copy.deepcopy(ref),
        args=args,
        train_dataset=Dataset.from_list(trl_rows(model_io)),
        processing_class=model_io.processor,
    )


def our_rows(side: int) -> list[Row]:
    return [Row(QUESTION, pair[side], None, row_id=f"{i}/{side}") for i, pair in enumerate(PAIRS)]


def test_rows_hold_trls_token_ids_and_label_its_completion_tokens(setup, tmp_path):
    model_io = setup[0]
    theirs = trl_trainer(setup, tmp_path).train_dataset
    for side, field in ((0, "chosen_ids"), (1, "rejected_ids")):
        batch = model_io.collate(our_rows(side))
        for i in range(len(PAIRS)):
            real = batch["attention_mask"][i].bool()
            ids, labels = batch["input_ids"][i][real].tolist(), batch["labels"][i][real]
            prompt, completion = theirs[i]["prompt_ids"], theirs[i][field]
            assert ids == prompt + completion, (PAIRS[i][side], field)
            labelled = [t for t in labels.tolist() if t != IGNORE_INDEX]
            assert labelled == completion and labels[: len(prompt)].eq(IGNORE_INDEX).all()
    end = model_io.tokenizer.convert_ids_to_tokens(theirs[0]["chosen_ids"][-2:])
    assert end == ["<|im_end|>", "Ċ"]  # the newline after the end of turn is TRL's last completion token


@pytest.mark.parametrize(
    "options",
    [
        {"loss_type": ["ipo"]},
        {"loss_type": ["sigmoid"]},
        {"loss_type": ["sigmoid", "sft"], "loss_weights": [1.0, 0.5]},
    ],
    ids=["ipo", "sigmoid", "sigmoid+sft"],
)
def test_the_dpo_loss_on_a_fixed_batch_equals_trls(setup, tmp_path, options):
    from cavpref.config import CAVPrefConfig
    from cavpref.media.spec import clip, to_json
    from cavpref.task_registry import task_names
    from cavpref.trainer import CAVPrefTrainer

    model_io, policy, ref = setup
    tr = trl_trainer(setup, tmp_path, **options)
    want = tr.compute_loss(tr.model, next(iter(tr.get_train_dataloader()))).item()

    args = CAVPrefConfig(
        output_dir=str(tmp_path / "ours"),
        method="dpo",
        beta=0.5,
        use_cpu=True,
        bf16=False,
        report_to="none",
        disable_tqdm=True,
        media_root=str(tmp_path),
        **options,
    )
    # the trainer is built for its objective only (its loss code, on log-probs computed below): one row in the
    # preference schema satisfies its dataset check; nothing of it is decoded
    row = {"id": "0", "task": task_names()[0], "prompt": QUESTION, "chosen": "a", "rejected": "b"}
    dataset = Dataset.from_list([{**row, "media": to_json(clip("unused.mp4"))}])
    ours = CAVPrefTrainer(
        copy.deepcopy(policy), model_io, args=args, ref_model=copy.deepcopy(ref), train_dataset=dataset
    )
    batch = model_io.collate(our_rows(0) + our_rows(1))  # the chosen rows, then the rejected ones
    n = len(PAIRS)
    inputs = {"model_inputs": batch, "slots": {"y_w": torch.arange(n), "y_l": torch.arange(n, 2 * n)}}
    policy_logps = model_io.logps(ours.model, batch)
    with torch.no_grad():
        ref_logps = model_io.logps(ref, batch)
    pol = {s: policy_logps[inputs["slots"][s]] for s in ("y_w", "y_l")}
    rf = {s: ref_logps[inputs["slots"][s]] for s in ("y_w", "y_l")}
    got = sum(t.weight * ours.objective.term_value(t, inputs, pol, rf) for t in args.terms).item()
    assert got == pytest.approx(want, abs=1e-5), options
