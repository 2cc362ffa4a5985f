"""``cavpref build traceav``: TraceAV-Bench's construction pipeline (Sec. 3) over a folder of long videos.

Stages (each resumable, ``work.Stages``): ``collect`` (dedup + filters, ``collect``) -> ``visual`` (Step 1) ->
``fusion`` (Step 2) -> ``segment`` (Step 3a) -> ``propose`` (3b) -> ``question`` (3c) -> rules -> ``verify``
-> ``blindfold`` -> outputs: ``data/<task_type>.json`` (the released format; ``--media_root`` of
``cavpref eval traceav`` is ``--videos``), ``data/video_name_mapping.json``, ``intermediate/`` (captions and
event blocks per video, for the review of textual intermediates), ``candidates.jsonl`` (every question and
its gates), ``stats.json`` (reconciled counts, calls per role) and ``audit/`` (the human-audit sample).
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

from cavpref.chat_json import parse_json_reply
from cavpref.data_prep.builders import quality
from cavpref.data_prep.builders.endpoints import ask_one, call_stats, media_message, text_messages
from cavpref.data_prep.builders.media import VIDEO_EXTENSIONS, find_videos, for_role
from cavpref.data_prep.builders.traceav import catalog as cat
from cavpref.data_prep.builders.traceav import collect, qa
from cavpref.data_prep.builders.traceav import questions as qs
from cavpref.data_prep.builders.traceav.config import TraceConfig, TraceEndpoints
from cavpref.data_prep.builders.traceav.tasks import BY_TYPE, PROMPT_VERSION
from cavpref.data_prep.builders.work import (
    BuildError,
    Unit,
    begin_build,
    key_of,
    write_json,
    write_text,
)
from cavpref.media.decode import FramePolicy
from cavpref.media.spec import Source
from cavpref.output_dir import release_output_dir


def _mp4s(root: Path) -> tuple[list[str], list[str]]:
    """(``*.mp4`` paths, other files) under ``root``: the release names videos ``<video_id>.mp4``."""
    found = find_videos(root, VIDEO_EXTENSIONS)
    return [p for p in found if p.endswith(".mp4")], [p for p in found if not p.endswith(".mp4")]


def build(cfg: TraceConfig, ep: TraceEndpoints) -> dict[str, Any]:
    """Run (or resume) the build; returns the stats also written to ``stats.json``."""
    out, root, stages = begin_build("traceav", cfg, ep, PROMPT_VERSION)
    rels, other = _mp4s(root)
    if not rels:
        raise BuildError(f"--videos {root}: no .mp4 files (the released layout is <video_id>.mp4)")

    # collection
    units = [
        Unit(r, key_of("collect", r, (root / r).stat().st_size, (root / r).stat().st_mtime_ns, cfg.scene_fps))
        for r in rels
    ]
    measured = stages.run("collect", units, lambda u: collect.measure(u.id, root, cfg.scene_fps))
    kept, dropped = collect.select(measured, cfg)
    vid = {r: r[: -len(".mp4")] for r in kept}
    clients = {
        role: ep.client(
            role,
            stages.cache_path,
            cfg.caption_max_tokens if role in ("visual", "fusion") else cfg.agent_max_tokens,
        )
        for role in ep.roles()
    }
    frames = FramePolicy(num_frames=ep.caption_frames, size=ep.frame_size())

    def call(role, messages, parse, max_tokens):
        return ask_one(clients[role], messages, parse, max_tokens=max_tokens, retries=ep.parse_retries)

    def segments(rel):
        d = measured[rel]["duration"]
        n = int(d // cfg.segment_s) + (d % cfg.segment_s >= 1.0)
        return [(k + 1, k * cfg.segment_s, min(d, (k + 1) * cfg.segment_s)) for k in range(n)]

    # Step 1: visual captions with the entity cache, in order within a video
    def step1(unit: Unit) -> dict:
        cache: dict[str, str] = {}
        out_segments = []
        for minute, start, end in segments(unit.id):
            media = for_role(Source(unit.id, start, end), root, "video", frames)
            prompt = cat.VISUAL_PROMPT.format(minute=minute, start=start, end=end, cache=cat.dumps(cache))
            reply = call(
                "visual",
                media_message(media, prompt, ep.media_format),
                cat.parse_visual,
                cfg.caption_max_tokens,
            )
            present, new = cat.merge_cache(cache, reply)
            out_segments.append(
                {
                    "minute": minute,
                    "start": start,
                    "end": end,
                    "caption": reply["caption"],
                    "active_entities": present,
                    "discovered_new_entities": new,
                }
            )
        return {"segments": out_segments, "entity_library": cache}

    version = [PROMPT_VERSION, frames, ep.media_format]
    visual = stages.run(
        "visual",
        [Unit(r, key_of(ep.visual_model, r, segments(r), version)) for r in kept],
        step1,
        workers=ep.max_concurrency,
    )

    # Step 2: audio-visual fusion, one call per segment
    fusion_units = []
    for rel in sorted(visual):
        for seg in visual[rel]["segments"]:
            ents = {**seg["active_entities"], **seg["discovered_new_entities"]}
            prompt = cat.FUSION_PROMPT.format(
                minute=seg["minute"], visual=seg["caption"], entities=cat.dumps(ents)
            )
            payload = (rel, seg["start"], seg["end"], prompt)
            fusion_units.append(
                Unit(f"{rel}#{seg['minute']}", key_of(ep.fusion_model, payload, version), payload)
            )

    def step2(unit: Unit) -> dict:
        rel, start, end, prompt = unit.payload
        media = for_role(Source(rel, start, end), root, "audio", frames)
        return call(
            "fusion", media_message(media, prompt, ep.media_format), cat.parse_fusion, cfg.caption_max_tokens
        )

    fused = stages.run("fusion", fusion_units, step2, workers=ep.max_concurrency)

    # Step 3a: event segmentation with a look-ahead
    minutes: dict[str, list[dict]] = {}
    for rel in sorted(visual):
        rows = []
        for seg in visual[rel]["segments"]:
            f = fused.get(f"{rel}#{seg['minute']}")
            if f is None:
                break
            rows.append(
                {"minute": seg["minute"], "caption": f["caption"], "entities": cat.minute_entities(seg, f)}
            )
        if len(rows) == len(visual[rel]["segments"]):
            minutes[rel] = rows

    def step3a(unit: Unit) -> list[dict]:
        rows = minutes[unit.id]
        events: list[dict] = []
        current = cat.new_event(rows[0], rows[0]["caption"])
        for t in range(1, len(rows)):
            messages = text_messages(cat.SEGMENT_SYSTEM, cat.segment_prompt(rows, t, current["summary"]))
            decision = call("generator", messages, cat.parse_segment, cfg.agent_max_tokens)
            current = cat.apply_action(events, current, rows[t], rows[t - 1]["minute"], decision)
        return cat.close(events, current, rows[-1]["minute"])

    events = stages.run(
        "segment",
        [Unit(r, key_of(ep.generator_model, minutes[r], version)) for r in sorted(minutes)],
        step3a,
        workers=ep.max_concurrency,
    )
    for rel, evs in events.items():
        write_json(
            out / "intermediate" / "event_blocks" / f"{vid[rel]}.json",
            {"video_id": vid[rel], "event_blocks": evs, "entity_library": visual[rel]["entity_library"]},
        )
        write_json(
            out / "intermediate" / "captions" / f"{vid[rel]}.json",
            {"video_id": vid[rel], "visual": visual[rel]["segments"], "fused": minutes[rel]},
        )

    # Step 3b: trajectory proposal and the structural filter
    prop_units = []
    for task_type in cfg.tasks:
        for rel in sorted(events):
            messages = text_messages(
                qs.PROPOSE_SYSTEM, qs.propose_prompt(BY_TYPE[task_type], events[rel], cfg)
            )
            prop_units.append(Unit(f"{task_type}:{rel}", key_of(ep.generator_model, messages), messages))
    proposals = stages.run(
        "propose",
        prop_units,
        lambda u: call("generator", u.payload, qs.parse_proposal, cfg.agent_max_tokens),
        workers=ep.max_concurrency,
    )
    trajectories, chosen = Counter(), []
    for uid in sorted(proposals):
        task_type, rel = uid.split(":", 1)
        by_id = {e["event_id"]: e for e in events[rel]}
        survivors = []
        for cand in proposals[uid][: cfg.max_candidates]:
            problems = qs.trajectory_problems(cand, by_id, cfg)
            trajectories["proposed"] += 1
            for p in problems:
                trajectories[f"rejected: {p}"] += 1
            if not problems:
                survivors.append(cand)
        trajectories["kept"] += len(survivors)
        chosen += [(task_type, rel, k, c) for k, c in enumerate(survivors[: cfg.questions_per_video])]

    # Step 3c: one question per chosen trajectory
    q_units = []
    for task_type, rel, k, cand in chosen:
        by_id = {e["event_id"]: e for e in events[rel]}
        messages = text_messages(qs.QUESTION_SYSTEM, qs.question_prompt(BY_TYPE[task_type], cand, by_id))
        q_units.append(Unit(f"{task_type}:{rel}:{k}", key_of(ep.generator_model, messages), messages))
    raw = stages.run(
        "question",
        q_units,
        lambda u: call("generator", u.payload, parse_json_dict, cfg.agent_max_tokens),
        workers=ep.max_concurrency,
    )

    # QA: rules, then the verifier, then the blindfold solver
    items, gates, reasons = {}, {}, {}
    for uid in sorted(raw):
        task_type, rel = split_uid(uid)
        by_id = {e["event_id"]: e for e in events[rel]}
        hops, unknown, remapped = qs.refine_hops(raw[uid].get("final_trajectory"), by_id)
        item = qs.released_item(raw[uid], hops, cfg, random.Random(f"{cfg.seed}:{uid}"))
        items[uid] = item
        rule = qa.rule_problem(item, BY_TYPE[task_type], unknown, cfg.min_hops)
        gates[uid] = {"rules": rule or "pass", "minutes_remapped": remapped}
        reasons[uid] = f"rules: {rule}" if rule else None

    def gate(stage: str, role: str, ids: list[str], prompt, parse, failed: str) -> dict[str, Any]:
        """One model gate over the questions ``ids``: ``prompt(id) -> (system, user)``; a question whose call
        failed is rejected with ``failed`` (counted, and asked again on the next run)."""
        units = [
            Unit(u, key_of(getattr(ep, f"{role}_model"), m), m)
            for u in ids
            for m in [text_messages(*prompt(u))]
        ]
        results = stages.run(
            stage,
            units,
            lambda unit: call(role, unit.payload, parse, cfg.agent_max_tokens),
            workers=ep.max_concurrency,
        )
        for u in ids:
            if u not in results:
                reasons[u] = failed
        return results

    passed = [u for u in sorted(items) if reasons[u] is None]
    verdicts = gate(
        "verify",
        "verifier",
        passed,
        lambda u: (qa.VERIFY_SYSTEM, qa.verify_prompt(BY_TYPE[split_uid(u)[0]], items[u])),
        qa.parse_verdict,
        "not verified: the verifier failed",
    )
    for u in verdicts:
        gates[u]["verifier"] = {k: verdicts[u].get(k) for k in qa.VERDICT_KEYS}
        reasons[u] = qa.verdict_reason(verdicts[u])
    passed = [u for u in passed if reasons[u] is None]
    guesses = gate(
        "blindfold",
        "blindfold",
        passed,
        lambda u: (qa.BLINDFOLD_SYSTEM, qa.blindfold_prompt(items[u])),
        qa.parse_blindfold,
        "not checked: the blindfold solver failed",
    )
    for u, guess in guesses.items():
        gates[u]["blindfold"] = guess or "abstained"
        if guess and guess == items[u]["correct_options"]:
            reasons[u] = "blindfold: answered without the video"

    ledger = quality.Ledger()
    for uid in sorted(items):
        ledger.add(uid, split_uid(uid)[0], gates[uid], reasons[uid])
    videos = {
        "found": len(rels),
        "not_mp4": len(other),
        "kept": len(kept),
        "dropped": collect.reasons(dropped),
    }
    summary = {
        "videos": videos,
        "kept_videos": [vid[r] for r in kept],
        "trajectories": dict(sorted(trajectories.items())),
    }
    return _write(out, cfg, items, ledger, vid, events, stages, clients, summary, root)


def split_uid(uid: str) -> tuple[str, str]:
    """(sub-task, video path) of a question unit ``<task_type>:<path>:<k>`` (a path may hold ':')."""
    task_type, rest = uid.split(":", 1)
    return task_type, rest.rsplit(":", 1)[0]


def parse_json_dict(text: str | None) -> dict:
    return parse_json_reply(text, want=dict)


def _write(out, cfg, items, ledger, vid, events, stages, clients, summary, root) -> dict[str, Any]:
    by_task: dict[str, list] = {}
    for uid in ledger.kept():
        task_type, rel = split_uid(uid)
        by_task.setdefault(task_type, []).append((uid, {"video_id": vid[rel], **items[uid]}))
    audit_rows = []
    for task_type, rows in sorted(by_task.items()):
        released = [{"question_id": n, **item} for n, (_, item) in enumerate(rows, 1)]
        payload = {
            "task_type": task_type,
            "video_count": len({r["video_id"] for r in released}),
            "question_count": len(released),
            "items": released,
        }
        write_json(out / "data" / f"{task_type}.json", payload)
        audit_rows += [
            {"batch": task_type, "media_path": str(root / f"{r['video_id']}.mp4"), **r} for r in released
        ]
    write_json(
        out / "data" / "video_name_mapping.json",
        {v: {"source": "local", "id": f"{v}.mp4"} for v in sorted(vid.values())},
    )
    write_text(out / "candidates.jsonl", ledger.jsonl())
    sample = quality.audit_sample(audit_rows, cfg.audit_fraction, cfg.seed)
    quality.write_audit(sample, out / "audit")
    stats = {
        **summary,
        "events": {vid[r]: len(e) for r, e in sorted(events.items())},
        "questions": ledger.summary(),
        "written": {t: len(r) for t, r in sorted(by_task.items())},
        "stages": stages.stats,
        "calls": call_stats(clients, summary["videos"]["kept"]),
        "audit": {"fraction": cfg.audit_fraction, "rows": len(sample)},
        "outputs": {"data": "data", "media_root": str(root), "audit": "audit/audit_sample.csv"},
    }
    write_json(out / "stats.json", stats)
    release_output_dir(out)  # claimed by begin_build
    return {**stats, "folder": str(out)}
