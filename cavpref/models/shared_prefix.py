"""Shared-prefix scoring: each distinct (prompt, media) prefix goes through the language model once.

On an audio-visual model a preference row is almost all prefix (~1,450 media + prompt tokens against a response
of a few tokens), and DPO's y_w / y_l rows — plus CAVPref's anchor rows on the same media — repeat it exactly.
``pack_rows`` (CPU, in ``collate``) groups rows whose prompt token ids and media are identical and lays each
group out as one packed sequence ``[prefix, response_1, response_2, ...]``; ``block_mask`` lets every response
attend to the prefix and causally to itself only, and the positions of each response restart at the prefix end
(they are copied from the full row, so Qwen's 3D rope positions are exactly the full-row ones). Every token sees
exactly the keys, values and positions it sees in its full row, so log-probs and gradients equal full-row
scoring up to float summation order (tests/models/test_shared_prefix.py checks both at 1e-5 in fp32).

The first response token is predicted from the prefix's last position, which all responses of a group share:
the scoring targets are therefore explicit ``(position, token, row)`` triples, not a label shift.

A block mask needs an attention kernel that takes an arbitrary 4D mask (``sdpa``, ``eager``); with any other
(``flash_attention_2``, ``flex_attention``, ...) ``unsupported_reason`` says why and the model_io scores full
rows instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from cavpref.models.common import unwrap

#: attention implementations that accept an arbitrary (B, 1, L, L) mask as-is
MASK_KERNELS = ("sdpa", "eager")


def pack_rows(
    prompts: Sequence[Sequence[int]],
    responses: Sequence[Sequence[int]],
    media: Sequence[Any],
    pad_id: int,
    padding_side: str = "right",
) -> dict[str, torch.Tensor] | None:
    """Group rows by (prompt ids, media) and pack each group; None when no two rows share a prefix (packing
    would then only cost the mask).

    Returns (G groups, L' packed length, K targets per group):
    ``input_ids`` / ``valid`` / ``segment`` (G, L'): tokens, 1 on real tokens, 0 = prefix and k >= 1 = the
    group's k-th response (-1 on padding); ``src_row`` / ``src_pos`` (G, L'): the full row and the position in
    it each packed token comes from (positions are copied from there); ``group_row`` (G,): a row of each group
    (its media are the group's); ``target_pos`` / ``target_ids`` / ``target_valid`` / ``target_row`` (G, K):
    packed positions whose logits predict a response token, the token, validity, and the row it belongs to.
    """
    if padding_side not in ("left", "right"):
        raise ValueError(f"padding_side must be 'left' or 'right', got {padding_side!r}")
    groups: dict[tuple, list[int]] = {}
    for r, (p, m) in enumerate(zip(prompts, media)):
        groups.setdefault((tuple(p), m), []).append(r)
    if len(groups) == len(prompts):
        return None
    layouts = []
    for rows in groups.values():
        prefix = list(prompts[rows[0]])
        ids, seg, src_row, src_pos = (
            list(prefix),
            [0] * len(prefix),
            [rows[0]] * len(prefix),
            list(range(len(prefix))),
        )
        targets = []  # (position, token, row)
        for k, r in enumerate(rows, start=1):
            resp = list(responses[r])
            prev = len(prefix) - 1  # the first response token is predicted from the last prefix token
            for j, tok in enumerate(resp):
                targets.append((prev, tok, r))
                prev = len(ids)
                ids.append(tok)
                seg.append(k)
                src_row.append(r)
                src_pos.append(len(prefix) + j)
        layouts.append((ids, seg, src_row, src_pos, targets, rows[0]))
    n, length = len(layouts), max(len(lay[0]) for lay in layouts)
    k_max = max(len(lay[4]) for lay in layouts)
    out = {
        name: torch.full((n, length), fill, dtype=torch.long)
        for name, fill in (
            ("input_ids", pad_id),
            ("valid", 0),
            ("segment", -1),
            ("src_row", 0),
            ("src_pos", 0),
        )
    }
    tgt = {
        name: torch.zeros((n, k_max), dtype=torch.long) for name in ("target_pos", "target_ids", "target_row")
    }
    tgt["target_valid"] = torch.zeros((n, k_max), dtype=torch.bool)
    for g, (ids, seg, src_row, src_pos, targets, _) in enumerate(layouts):
        off = 0 if padding_side == "right" else length - len(ids)
        span = slice(off, off + len(ids))
        for name, values in (
            ("input_ids", ids),
            ("segment", seg),
            ("src_row", src_row),
            ("src_pos", src_pos),
        ):
            out[name][g, span] = torch.tensor(values, dtype=torch.long)
        out["valid"][g, span] = 1
        for t, (pos, tok, row) in enumerate(targets):
            tgt["target_pos"][g, t], tgt["target_ids"][g, t], tgt["target_row"][g, t] = pos + off, tok, row
            tgt["target_valid"][g, t] = True
    out.update(tgt)
    out["group_row"] = torch.tensor([lay[5] for lay in layouts], dtype=torch.long)
    out["num_rows"] = torch.tensor(len(prompts), dtype=torch.long)
    return out


def block_mask(segment: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """(G, 1, L', L') bool, True = query i may attend key j: j <= i (causal), j a real token, and j in the
    prefix or in i's own response. Padding queries attend to themselves only (a fully masked row would make
    NaNs that a later layer's zero attention weight still multiplies)."""
    length = segment.shape[-1]
    causal = torch.ones(length, length, dtype=torch.bool, device=segment.device).tril()
    q, k = segment.unsqueeze(-1), segment.unsqueeze(-2)
    same = (k == 0) | (k == q)
    mask = causal & same & valid.bool().unsqueeze(-2) & valid.bool().unsqueeze(-1)
    mask = mask | (torch.eye(length, dtype=torch.bool, device=segment.device) & ~valid.bool().unsqueeze(-1))
    return mask.unsqueeze(1)


def as_attention_mask(mask: torch.Tensor, kernel: str, dtype: torch.dtype) -> torch.Tensor:
    """The bool block mask in the form the kernel adds or selects with: bool for sdpa, additive float for eager."""
    if kernel == "eager":
        return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(
            ~mask, torch.finfo(dtype).min
        )
    return mask


def attention_kernel(model: torch.nn.Module) -> str | None:
    """The attention implementation the language model runs (a composite model's text config wins)."""
    config = getattr(unwrap(model), "config", None)
    if config is None:
        return None
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    return getattr(text, "_attn_implementation", None) or getattr(config, "_attn_implementation", None)


def unsupported_reason(model: torch.nn.Module) -> str | None:
    """Why shared-prefix scoring cannot run exactly on ``model`` (None: it can)."""
    kernel = attention_kernel(model)
    if kernel not in MASK_KERNELS:
        return (
            f"attention implementation {kernel!r} takes no arbitrary 4D attention mask (shared-prefix scoring "
            f"needs one of {MASK_KERNELS}); scoring full rows"
        )
    return None


def packed_positions(full: torch.Tensor, packed: dict[str, torch.Tensor]) -> torch.Tensor:
    """Packed position ids copied from the full rows' ``full`` ((B, L) or (3, B, L) for 3D rope)."""
    src_row, src_pos = packed["src_row"].to(full.device), packed["src_pos"].to(full.device)
    return full[..., src_row, src_pos]


def gathered_row_logps(logits: torch.Tensor, packed: dict[str, torch.Tensor]) -> torch.Tensor:
    """(R,) fp32 response log-prob sums from logits at the packed target positions ((G, K, V))."""
    dev = logits.device
    valid = packed["target_valid"].to(dev)
    g_idx, j_idx = valid.nonzero(as_tuple=True)
    picked = logits[g_idx, j_idx].float().log_softmax(-1)
    token_logps = picked.gather(-1, packed["target_ids"].to(dev)[g_idx, j_idx].unsqueeze(-1)).squeeze(-1)
    out = torch.zeros(int(packed["num_rows"]), dtype=torch.float32, device=dev)
    return out.index_add(0, packed["target_row"].to(dev)[g_idx, j_idx], token_logps)


def token_counts(batch: dict[str, Any]) -> dict[str, int]:
    """Tokens the language model processes for this batch: full rows vs the packed layout (benchmarks, logs)."""
    full = int(batch["attention_mask"].sum())
    packed = batch.get("packed")
    return {"full_rows": full, "shared_prefix": int(packed["valid"].sum()) if packed is not None else full}
