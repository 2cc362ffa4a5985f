"""``cavpref build aura``: AURA's construction pipeline (Sec. 3.2, Fig. 3) over a folder of the user's videos.

Stages (each resumable, ``work.Stages``):

1. ``scan``        duration, streams and loudness per second of every video (``media.scan``);
2. clip plan       short / long / shifted windows, TSA's balance, PSP pairs (``plan``; no model);
3. ``visual`` / ``audio`` / ``transcript``: dense visual captions, audio captions (endpoints) and Whisper
   transcripts of every clip a prompt describes (paper stage 1, "Captioning and Transcription");
4. ID pairing      by a pairs file or the overlap of the visual captions;
5. ``generate``    one call per (task, clip) with the task's prompt (stage 2, "Prompting and Generation");
6. checks          every question checked, kept or rejected with a reason (stage 3, "Structured Output and
   Validation"), options shuffled, duplicates dropped;
7. ``media``       the kept questions' clips written as ``videos/<video_id>.mp4`` (the only encoding);
8. outputs         ``aura.jsonl`` (the released format), ``candidates.jsonl`` (every question and its checks),
   ``stats.json`` (reconciled counts, calls per role), ``audit/`` (the human-audit sample).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

from cavpref.data_prep.builders.asr import Transcriber
from cavpref.data_prep.builders.aura import plan
from cavpref.data_prep.builders.aura.config import AuraConfig, AuraEndpoints
from cavpref.data_prep.builders.aura.generate import parse_reply, problem, released_record, user_prompt
from cavpref.data_prep.builders.aura.tasks import BY_CODE, PROMPT_VERSION
from cavpref.data_prep.builders.endpoints import (
    ask_one,
    call_stats,
    media_message,
    nonempty_text,
    text_messages,
)
from cavpref.data_prep.builders.media import SAMPLE_RATE, find_videos, for_role, scan, video_ids
from cavpref.data_prep.builders.quality import Ledger, audit_sample, write_audit
from cavpref.data_prep.builders.work import (
    BuildError,
    Unit,
    begin_build,
    key_of,
    write_json,
    write_text,
)
from cavpref.media.decode import FramePolicy
from cavpref.media.materialize import materialize
from cavpref.media.spec import concat, from_json, has_audio, stack, to_json
from cavpref.output_dir import release_output_dir

VISUAL_PROMPT = (
    "Describe this video clip in dense detail: the setting; every person, instrument and object with its "
    "appearance, clothing, colours and position in the frame; and the actions in the order they happen. "
    "Plain prose, no lists."
)
AUDIO_PROMPT = (
    "Describe what is heard in this audio clip: every sound source (instruments, voices, noises), the "
    "character of each (pitch, timbre, loudness, tempo, rhythm), when it occurs, and the overall mood. Do not "
    "transcribe speech word by word. Plain prose, no lists."
)


def _stamp(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


def _questions(cfg: AuraConfig, ids: dict[str, str], clips: dict[str, dict], pairs) -> list[plan.Question]:
    """Every generator call of the build: per task, the clips it asks about (module docstring of ``plan``)."""
    out: list[plan.Question] = []
    room = {rel: clips[rel]["shifted"] is not None for rel in clips}
    shifted = plan.sync_choice(sorted(clips), room, cfg.seed)
    for code in cfg.tasks:
        task = BY_CODE[code]
        if task.layout in ("single", "sync"):
            for rel in sorted(clips):
                kind = "shifted" if task.layout == "sync" and shifted[rel] else task.window
                spec = clips[rel][kind]
                truth = {}
                if task.layout == "sync":
                    truth = {
                        "sync_status": "Misaligned" if kind == "shifted" else "Aligned",
                        "shift_s": cfg.sync_shift_s if kind == "shifted" else 0.0,
                    }
                out.append(plan.Question(code, plan.clip_name(ids[rel], spec), spec, {"clip": spec}, truth))
        elif task.layout == "stack":
            for top, bottom in pairs["ID"]:
                a, b = clips[top]["short"], clips[bottom]["short"]
                media = stack(a, b, gains=(cfg.stack_gain, cfg.stack_gain))
                out.append(
                    plan.Question(code, f"stack_{ids[top]}__{ids[bottom]}", media, {"top": a, "bottom": b})
                )
        else:  # sequence
            for k, (novice, expert) in enumerate(pairs["PSP"]):
                first_is_novice = random.Random(f"psp:{cfg.seed}:{novice}:{expert}").random() < 0.5
                order = (
                    [(novice, "novice"), (expert, "expert")]
                    if first_is_novice
                    else [(expert, "expert"), (novice, "novice")]
                )
                (r1, role1), (r2, role2) = order
                a, b = clips[r1]["long"], clips[r2]["long"]
                truth = {"first": role1, "second": role2}
                out.append(
                    plan.Question(
                        code, f"skill_{ids[r1]}__{ids[r2]}", concat(a, b), {"first": a, "second": b}, truth
                    )
                )
    return out


def build(cfg: AuraConfig, ep: AuraEndpoints) -> dict[str, Any]:
    """Run (or resume) the build; returns the stats also written to ``stats.json``."""
    out, root, stages = begin_build("aura", cfg, ep, PROMPT_VERSION)
    transcriber = Transcriber(cfg.whisper_model, device=cfg.whisper_device, language=cfg.whisper_language)
    try:  # before any caption is asked for: a Whisper that cannot load would fail the build at its third stage
        if any(BY_CODE[t].transcript for t in cfg.tasks):
            transcriber.check()
        rels = find_videos(root, cfg.extensions)
        if not rels:
            raise BuildError(f"--videos {root}: no video files ({', '.join(cfg.extensions)})")
    except BaseException:
        release_output_dir(out)
        raise
    ids = video_ids(rels)

    # 1. scan
    def do_scan(unit: Unit) -> dict:
        s = scan(unit.id, root, frames=False)
        return {"duration": s.duration, "has_video": s.has_video, "has_audio": s.has_audio, "power": s.power}

    scans = stages.run("scan", [Unit(r, key_of("scan", r, _stamp(root / r))) for r in rels], do_scan)
    skipped = Counter()
    usable = []
    for rel in rels:
        s = scans.get(rel)
        if s is None:
            skipped["unreadable"] += 1
        elif not (s["has_video"] and s["has_audio"]):
            skipped["no audio stream" if s["has_video"] else "no video stream"] += 1
        else:
            usable.append(rel)

    # 2. clips
    clips = {
        rel: plan.windows(rel, scans[rel], cfg.short_clip_s, cfg.long_clip_s, cfg.sync_shift_s)
        for rel in usable
    }
    known = set(usable)
    pairs: dict[str, list] = {"ID": [], "PSP": []}
    if "PSP" in cfg.tasks and cfg.skill_pairs:
        pairs["PSP"] = plan.read_pairs(cfg.skill_pairs, ("novice", "expert"), known)
    if "ID" in cfg.tasks and cfg.id_pairs:
        pairs["ID"] = plan.read_pairs(cfg.id_pairs, ("top", "bottom"), known)

    # 3. captions and transcripts of every clip a prompt will describe
    frames = FramePolicy(num_frames=ep.caption_frames, size=ep.frame_size())
    draft = _questions(cfg, ids, clips, {"ID": [], "PSP": pairs["PSP"]})
    described = {to_json(s) for q in draft for s in q.parts.values()}
    if "ID" in cfg.tasks:
        described |= {to_json(clips[r]["short"]) for r in usable}
    needs_transcript = {to_json(q.parts["clip"]) for q in draft if BY_CODE[q.task].transcript}
    clients = {
        role: ep.client(role, stages.cache_path, cfg.caption_max_tokens) for role in ("visual", "audio")
    }
    clients["generator"] = ep.client("generator", stages.cache_path, cfg.generator_max_tokens)

    def caption(role: str, stream: str, prompt: str):
        def work(unit: Unit) -> str:
            media = for_role(from_json(unit.id), root, stream, frames)
            messages = media_message(media, prompt, ep.media_format)
            return ask_one(
                clients[role],
                messages,
                nonempty_text,
                max_tokens=cfg.caption_max_tokens,
                retries=ep.parse_retries,
            )

        return work

    def units(role: str, specs, prompt: str) -> list[Unit]:
        model = getattr(ep, f"{role}_model")
        return [
            Unit(s, key_of(role, model, s, prompt, frames, ep.media_format, PROMPT_VERSION))
            for s in sorted(specs)
        ]

    visual = stages.run(
        "visual",
        units("visual", described, VISUAL_PROMPT),
        caption("visual", "video", VISUAL_PROMPT),
        workers=ep.max_concurrency,
    )
    audible = {s for s in described if has_audio(from_json(s))}
    audio = stages.run(
        "audio",
        units("audio", audible, AUDIO_PROMPT),
        caption("audio", "audio", AUDIO_PROMPT),
        workers=ep.max_concurrency,
    )

    def transcribe(unit: Unit) -> str:
        media = for_role(from_json(unit.id), root, "audio", frames)
        return transcriber(media.audio, SAMPLE_RATE)

    transcripts = stages.run(
        "transcript",
        [Unit(s, key_of("asr", s, transcriber.describe())) for s in sorted(needs_transcript)],
        transcribe,
    )

    # 4. ID pairs by shared words of the short clips' visual captions
    if "ID" in cfg.tasks and not cfg.id_pairs:
        texts = {
            rel: visual[to_json(clips[rel]["short"])]
            for rel in usable
            if to_json(clips[rel]["short"]) in visual
        }
        pairs["ID"] = plan.pair_by_overlap(texts)
    questions = _questions(cfg, ids, clips, pairs)

    # 5. generation
    def inputs(spec) -> dict[str, str] | None:
        key = to_json(spec)
        if key not in visual or key not in audio:
            return None
        return {"visual": visual[key], "audio": audio[key], "transcript": transcripts.get(key, "")}

    gen_units, by_id, waiting = [], {}, Counter()
    for q in questions:
        task = BY_CODE[q.task]
        parts = {label: inputs(spec) for label, spec in q.parts.items()}
        if any(p is None for p in parts.values()) or (
            task.transcript and to_json(q.parts["clip"]) not in transcripts
        ):
            waiting[q.task] += (
                1  # a description failed this run (counted in its stage); asked again on resume
            )
            continue
        messages = text_messages(task.system_prompt(), user_prompt(task, parts, q.truth))
        uid = f"{q.task}:{q.video_id}"
        by_id[uid] = q
        gen_units.append(Unit(uid, key_of(ep.generator_model, messages, PROMPT_VERSION), messages))

    def generate(unit: Unit) -> list[dict]:
        task = BY_CODE[by_id[unit.id].task]
        return ask_one(
            clients["generator"],
            unit.payload,
            lambda t: parse_reply(task, t),
            max_tokens=cfg.generator_max_tokens,
            retries=ep.parse_retries,
        )

    generated = stages.run("generate", gen_units, generate, workers=ep.max_concurrency)

    # 6. checks -> records
    ledger, records, seen = Ledger(), [], set()
    for uid in sorted(generated):
        q = by_id[uid]
        task = BY_CODE[q.task]
        for j, item in enumerate(generated[uid]):
            qid = f"{uid}:{j}"
            reason = problem(item)
            key = (q.video_id, " ".join(str(item.get("question", "")).lower().split()))
            if reason is None and key in seen:
                reason = "duplicate question"
            ledger.add(qid, q.task, {"rules": reason or "pass"}, reason)
            if reason is None:
                seen.add(key)
                records.append(
                    (q, released_record(item, q.video_id, task, random.Random(f"{cfg.seed}:{qid}"), q.truth))
                )

    # 7. the kept clips, written once each
    videos_dir = out / "videos"
    media = {q.video_id: q.media for q, _ in records}

    def write_clip(unit: Unit) -> str:
        target = videos_dir / f"{unit.id}.mp4"
        materialize(unit.payload, root, target)
        return target.name

    media_units = [Unit(v, key_of(to_json(spec)), spec) for v, spec in sorted(media.items())]
    for unit in media_units:  # a clip deleted since it was written is written again
        if not (videos_dir / f"{unit.id}.mp4").is_file():
            stages.forget("media", unit)
    written = stages.run("media", media_units, write_clip)
    records = [(q, r) for q, r in records if q.video_id in written]

    # 8. outputs
    write_text(out / "aura.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for _, r in records))
    write_text(out / "candidates.jsonl", ledger.jsonl())
    rows = [
        {
            "batch": r["category"],
            "task": q.task,
            "video_id": q.video_id,
            "media_path": str(videos_dir / f"{q.video_id}.mp4"),
            **{k: v for k, v in r.items() if k not in ("video_id", "category")},
        }
        for q, r in records
    ]
    sample = audit_sample(rows, cfg.audit_fraction, cfg.seed)
    write_audit(sample, out / "audit")
    calls = call_stats(clients, len(usable))
    stats = {
        "videos": {"found": len(rels), "usable": len(usable), "skipped": dict(skipped)},
        "questions": ledger.summary(),
        "written": {
            "questions": len(records),
            "videos": len(written),
            "by_task": dict(Counter(q.task for q, _ in records)),
        },
        "not_asked": {"a description or transcript failed": dict(waiting)},
        "pairs": {k: len(v) for k, v in pairs.items()},
        "stages": stages.stats,
        "calls": calls,
        "audit": {"fraction": cfg.audit_fraction, "rows": len(sample)},
        "outputs": {"benchmark": "aura.jsonl", "media_root": "videos", "audit": "audit/audit_sample.csv"},
    }
    write_json(out / "stats.json", stats)
    release_output_dir(out)  # claimed by begin_build
    return {**stats, "folder": str(out)}
