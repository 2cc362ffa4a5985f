"""`cavpref prep`: build from source files in the released formats, outputs, split hygiene, fingerprint
no-op, shard + merge == single build, bad input errors and skip accounting, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from datasets import Dataset, load_from_disk

from cavpref.data import ALL_TASKS, BenchmarkItem, PreferenceExample
from cavpref.data_prep.build import PrepConfig, PrepError, build, format_stats, merge, validate
from cavpref.data_prep.cli import main
from cavpref.data_prep.readers import ReaderError
from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tasks.context import TableView
from cavpref.data_prep.tasks.schema import load_outputs
from cavpref.media.spec import from_json, sources

ONTOLOGY = [
    ("/m/music", "Music", ["/m/inst"]),
    ("/m/inst", "Musical instrument", ["/m/p", "/m/g", "/m/v", "/m/d"]),
    ("/m/p", "Piano", []),
    ("/m/g", "Guitar", []),
    ("/m/v", "Violin", []),
    ("/m/d", "Drum", []),
    ("/m/animal", "Animal", ["/m/dog", "/m/cat", "/m/cow"]),
    ("/m/dog", "Dog", []),
    ("/m/cat", "Cat", []),
    ("/m/cow", "Cow", []),
    ("/m/thing", "Sounds of things", ["/m/car", "/m/train", "/m/siren"]),
    ("/m/car", "Car", []),
    ("/m/train", "Train", []),
    ("/m/siren", "Siren", []),
]
INSTRUMENTS, ANIMALS, VEHICLES = (
    ["piano", "guitar", "violin", "drum"],
    ["dog", "cat", "cow"],
    ["car", "train", "siren"],
)


def make_world(root: Path, n_music: int = 30, n_avqa: int = 16, n_seg: int = 24) -> Path:
    """Source annotations in the released formats (SOURCE_FORMATS.md) and empty media files."""
    for d in ("music_avqa/json", "music_avqa/videos", "avqa/annotation", "avqa/videos", "audioset/clips"):
        (root / d).mkdir(parents=True)
    (root / "audioset/ontology.json").write_text(
        json.dumps(
            [
                {
                    "id": i,
                    "name": n,
                    "description": "",
                    "citation_uri": "",
                    "positive_examples": [],
                    "child_ids": c,
                    "restrictions": [],
                }
                for i, n, c in ONTOLOGY
            ]
        )
    )
    leaves = [(i, n) for i, n, c in ONTOLOGY if not c]
    (root / "audioset/class_labels_indices.csv").write_text(
        "index,mid,display_name\n" + "".join(f'{k},{i},"{n}"\n' for k, (i, n) in enumerate(leaves))
    )
    music = []
    for k in range(n_music):
        vid, a = f"{k // 3:08d}", INSTRUMENTS[k % 4]
        kind = [
            ("Temporal", "Which instrument sounds after the <Object>?", INSTRUMENTS[(k + 1) % 4]),
            ("Counting", "How many <Object> are playing?", ["one", "two", "three", "four"][k % 4]),
            ("Location", "Where is the <Object>?", ["left", "right", "middle"][(k // 3) % 3]),
        ][k % 3]
        music.append(
            {
                "video_id": vid,
                "question_id": k % 7,
                "type": json.dumps(["Audio-Visual", kind[0]]),
                "question_content": kind[1],
                "templ_values": json.dumps([a]),
                "question_deleted": 0,
                "anser": kind[2],
            }
        )
        (root / f"music_avqa/videos/{vid}.mp4").touch()
    music.append(
        {
            "video_id": "00000000",
            "question_id": 99,
            "type": '["Audio", "Counting"]',
            "question_content": "How many instruments are sounding?",
            "templ_values": "[]",
            "question_deleted": 0,
            "anser": "two",
        }
    )
    (root / "music_avqa/json/avqa-train.json").write_text(json.dumps(music))
    avqa = []
    for k in range(n_avqa):
        name = f"v{k:010d}_{k * 10:06d}"
        pool = ANIMALS if k % 2 == 0 else VEHICLES
        choices = pool + [INSTRUMENTS[k % 4]]
        avqa.append(
            {
                "id": k,
                "video_name": name,
                "video_id": k,
                "question_text": "What is making the sound?",
                "multi_choice": choices,
                "answer": choices.index(pool[k % 3]),
                "question_relation": "Both",
                "question_type": "Which",
            }
        )
        (root / f"avqa/videos/{name}.mp4").touch()
    (root / "avqa/annotation/train_qa.json").write_text(json.dumps(avqa))
    rows = [
        "# Segments csv created Sun Mar  5 10:54:25 2017",
        "# num_ytids=24, num_segs=24",
        "# YTID, start_seconds, end_seconds, positive_labels",
    ]
    for k in range(n_seg):
        ytid = f"yt{k:09d}"
        rows.append(f'{ytid}, {k}.000, {k + 10}.000, "{leaves[k % len(leaves)][0]}"')
        (root / f"audioset/clips/{ytid}_{k}.mp4").touch()
    (root / "audioset/eval_segments.csv").write_text("\n".join(rows) + "\n")
    return root


def config(world: Path, out: Path, **kw) -> PrepConfig:
    return PrepConfig(world=str(world), output_dir=str(out), progress=False, **kw)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("prep")
    world = make_world(root / "world")
    stats = build(config(world, root / "single", num_proc=2))
    return world, root, stats


def clip_paths(item_or_pref) -> set[str]:
    specs = [item_or_pref.media]
    for pair in (getattr(item_or_pref, "visual", None), getattr(item_or_pref, "audio", None)):
        if pair is not None:
            specs += [pair.clean, pair.perturbed]
    return {s.path for spec in specs for s in sources(from_json(spec))}


def test_outputs_round_trip(built):
    _, root, stats = built
    out = root / "single"
    for name in ("manifest.json", "stats.json", "lookup_tables.json"):
        assert (out / name).is_file()
    items, prefs = load_outputs(out)
    assert set(items) == set(prefs) == {"train", "test"}
    # the nine + CLEAN (prep's default tasks)
    assert {i.task for split in items.values() for i in split} == set(ALL_TASKS)
    dd = load_from_disk(str(out / "benchmark" / "MVIT"))
    assert set(dd) == {"train", "test"}
    row = dd["train"][0]
    assert BenchmarkItem.from_row(row).to_row() == row
    # the three forms hold the same rows
    jsonl = [json.loads(x) for x in (out / "jsonl/preferences/train.jsonl").read_text().splitlines()]
    parquet = Dataset.from_parquet(str(out / "parquet/preferences/train.parquet"))
    arrow = load_from_disk(str(out / "preferences"))["train"]
    assert jsonl == arrow.to_list() == parquet.to_list()
    assert [PreferenceExample.from_row(r).id for r in jsonl] == sorted(r["id"] for r in jsonl)
    assert stats["preferences"] == {s: len(p) for s, p in prefs.items()}


def test_split_shares_no_clip(built):
    items, prefs = load_outputs(built[1] / "single")
    seen = {s: set().union(*(clip_paths(x) for x in items[s] + prefs[s])) for s in items}
    assert seen["train"] and seen["test"] and not seen["train"] & seen["test"]
    for split in items.values():
        for item in split:
            assert set(item.source_ids) == clip_paths(item)


def test_stats_reconcile_and_table(built):
    stats = built[2]
    assert stats["records_read"] == 30 + 1 + 16 + 24
    assert stats["excluded_single_modality"] == {"music_avqa: audio-only question": 1}
    assert stats["records_reconcile"] and stats["records_kept"] == 70
    for task, t in stats["tasks"].items():
        assert t["reconcile"] and t["eligible"] == t["generated"] + sum(t["skipped"].values()), task
        counted = sum(
            n
            for by_cat in stats["counts"].get(task, {}).values()
            for by_split in by_cat.values()
            for n in by_split.values()
        )
        assert counted == t["items"]
    assert stats["tasks"]["COT-Stitch"]["eligible"] == 24 and stats["tasks"]["MVT"]["eligible"] == 30
    text = format_stats(stats, ["train", "test"])
    assert "task        source      category" in text and "MVIT        avqa        Existential" in text
    assert json.loads((built[1] / "single" / "stats.json").read_text()) == {
        k: v for k, v in stats.items() if k != "up_to_date"
    }


def test_shard_merge_equals_single_build(built):
    world, root, _ = built
    for i in range(2):
        build(config(world, root / f"shard{i}", num_shards=2, shard_index=i))
    merge(root / "merged_a", [str(root / "shard1"), str(root / "shard0")])
    merge(root / "merged_b", [str(root / "shard0"), str(root / "shard1")])
    single = root / "single"  # built with num_proc=2: also equal to the one-process shards
    files = sorted(
        p.relative_to(single)
        for p in single.rglob("*")
        if p.suffix in (".jsonl", ".parquet") or p.name in ("stats.json", "lookup_tables.json")
    )
    assert len(files) > 40
    for f in files:
        assert (
            (root / "merged_a" / f).read_bytes()
            == (single / f).read_bytes()
            == (root / "merged_b" / f).read_bytes()
        ), f
    with pytest.raises(ValueError, match="cover"):
        merge(root / "bad", [str(root / "shard0")])


def test_second_run_is_a_no_op(built, tmp_path):
    world = built[0]
    cfg = config(world, tmp_path / "out", tasks=["MCIT", "CAT"], formats=["jsonl"])
    assert build(cfg)["up_to_date"] is False
    stamp = (tmp_path / "out" / "manifest.json").stat().st_mtime_ns
    assert build(cfg)["up_to_date"] is True
    assert build(config(world, tmp_path / "out", tasks=["MCIT", "CAT"], formats=["jsonl"], num_proc=2))[
        "up_to_date"
    ]
    assert (tmp_path / "out" / "manifest.json").stat().st_mtime_ns == stamp
    assert (
        build(config(world, tmp_path / "out", tasks=["MCIT", "CAT"], formats=["jsonl"], seed=1))["up_to_date"]
        is False
    )
    assert (
        build(config(world, tmp_path / "out", tasks=["MCIT", "CAT"], formats=["jsonl"], seed=1, force=True))[
            "up_to_date"
        ]
        is False
    )


def test_changed_input_file_rebuilds(tmp_path):
    world = make_world(tmp_path / "w")
    cfg = config(world, tmp_path / "out", tasks=["MVT"], formats=["jsonl"])
    first = build(cfg)
    ann = world / "music_avqa/json/avqa-train.json"
    data = json.loads(ann.read_text())
    data.append({**data[1], "question_id": 1000})
    ann.write_text(json.dumps(data))
    second = build(cfg)
    assert second["up_to_date"] is False and second["records_read"] == first["records_read"] + 1


def test_missing_media_error_and_skip(tmp_path):
    world = make_world(tmp_path / "w")
    (world / "avqa/videos/v0000000003_000030.mp4").unlink()
    with pytest.raises(PrepError) as err:
        build(config(world, tmp_path / "a", tasks=["MCIT"], formats=["jsonl"]))
    msg = str(err.value)
    assert "train_qa.json: record 3" in msg and "field 'media'" in msg and "v0000000003_000030.mp4" in msg
    stats = build(config(world, tmp_path / "b", tasks=["MCIT"], formats=["jsonl"], on_error="skip"))
    assert stats["invalid_skipped"] == {"media: missing media file": 1}
    assert stats["records_reconcile"] and stats["records_kept"] == 69


def test_answer_not_in_vocabulary(tmp_path):
    world = make_world(tmp_path / "w")
    override = tmp_path / "tables.json"  # a user override that drops "four" from the Count vocabulary
    override.write_text(json.dumps({"version": 1, "t3": {"Count": ["one", "two", "three"]}}))
    with pytest.raises(PrepError, match=r"record 7 .*field 'answer': answer 'four' not in the T3 vocabulary"):
        build(config(world, tmp_path / "a", tasks=["MVT"], formats=["jsonl"], tables_override=str(override)))
    stats = build(
        config(
            world,
            tmp_path / "b",
            tasks=["MVT"],
            formats=["jsonl"],
            tables_override=str(override),
            on_error="skip",
        )
    )
    assert stats["invalid_skipped"] == {"answer: answer not in the T3 vocabulary": 2}
    saved = json.loads((tmp_path / "b" / "lookup_tables.json").read_text())
    assert saved["version"] == 1 and saved["t3"]["Count"] == ["one", "two", "three"]
    assert stats["records_reconcile"]


def test_malformed_record_error_and_skip(tmp_path):
    world = make_world(tmp_path / "w")
    ann = world / "music_avqa/json/avqa-train.json"
    data = json.loads(ann.read_text())
    del data[4]["anser"]
    data[5]["type"] = '["Audio-Visual", "Colour"]'
    ann.write_text(json.dumps(data))
    with pytest.raises(ReaderError, match=r"avqa-train.json: record 4: field 'anser'"):
        build(config(world, tmp_path / "a", tasks=["MVT"], formats=["jsonl"]))
    stats = build(config(world, tmp_path / "b", tasks=["MVT"], formats=["jsonl"], on_error="skip"))
    assert stats["reader_skipped_total"] == 2 and stats["records_read"] == 71 and stats["records_reconcile"]


def test_validate_names_file_record_field():
    view = TableView(type("T", (), {"t1": {}, "t2": {}, "t3": {"Count": ["one"]}})())
    cfg = PrepConfig(output_dir="x", check_media=False)
    rec = QARecord(
        "music_avqa",
        "00000001",
        "data/avqa-train.json",
        7,
        '{"op":"source","path":"a.mp4"}',
        "How many?",
        "one",
        None,
        "Colour",
    )
    with pytest.raises(
        PrepError, match=r"data/avqa-train.json: record 7 \(00000001\): field 'category': unknown"
    ):
        validate(rec, view, cfg, {})
    rec.category, rec.media = "Count", '{"op":"source","path":"../escape.mp4"}'
    with pytest.raises(PrepError, match="field 'media': not a MediaSpec"):
        validate(rec, view, cfg, {})


def test_cli(built, tmp_path, capsys):
    world = built[0]
    recipe = tmp_path / "prep.yaml"
    recipe.write_text(
        f"world: {world}\noutput_dir: {tmp_path / 'out'}\ntasks: [COT-Swap]\nformats: [jsonl]\n"
        "progress: false\nseed: 5\n"
    )
    assert main([str(recipe), "--seed", "6"]) == 0
    printed = capsys.readouterr().out
    assert "COT-Swap    audioset    Temporal" in printed and "wrote" in printed
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["config"]["seed"] == 6
    assert main([str(recipe), "--seed", "6"]) == 0
    assert "up to date" in capsys.readouterr().out
    recipe.write_text("colour: blue\n")
    assert main([str(recipe)]) == 1 and "'--colour', 'blue'" in capsys.readouterr().err
    assert main(["read", "--source", "avqa", str(world / "avqa/annotation/train_qa.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 16 and json.loads(lines[0])["source"] == "avqa"
    assert main(["merge", str(tmp_path / "m")]) == 2


def test_cli_config_flag_and_overrides(built, tmp_path, capsys):
    """`cavpref prep --config x.yaml --key value`: the file sets the keys, the command line wins."""
    world = built[0]
    recipe = tmp_path / "prep.yaml"
    recipe.write_text(
        f"world: {world}\noutput_dir: {tmp_path / 'out'}\ntasks: [COT-Swap]\nformats: [jsonl]\n"
        "progress: false\nseed: 5\n"
    )
    assert main(["--config", str(recipe), "--seed", "7", "--tasks", "CAT"]) == 0
    cfg = json.loads((tmp_path / "out" / "manifest.json").read_text())["config"]
    assert (cfg["seed"], cfg["tasks"], cfg["formats"]) == (7, ["CAT"], ["jsonl"])
    assert "CAT " in capsys.readouterr().out
    assert main(["--config", str(recipe), "--colour", "blue"]) == 1  # unknown on the command line too
    assert "unknown key --colour" in capsys.readouterr().err


def test_cli_help_lists_every_key(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    printed = capsys.readouterr().out
    missing = [k for k in PrepConfig.__dataclass_fields__ if f"--{k}" not in printed]
    assert not missing, missing


def test_cli_merge_keys_and_the_deprecated_positional_form(built, tmp_path, capsys):
    world, _root, _ = built
    shards = []
    for i in range(2):
        shards.append(str(tmp_path / f"shard{i}"))
        build(config(world, tmp_path / f"shard{i}", num_shards=2, shard_index=i, tasks=["COT-Swap"]))
    assert main(["merge", "--output_dir", str(tmp_path / "a"), "--shards", *shards]) == 0
    assert "merged 2 shards" in capsys.readouterr().out
    merge_yaml = tmp_path / "merge.yaml"
    merge_yaml.write_text(f"output_dir: {tmp_path / 'b'}\nshards: [{shards[1]}, {shards[0]}]\n")
    assert main(["merge", "--config", str(merge_yaml)]) == 0
    assert main(["merge", str(tmp_path / "c"), *shards]) == 0
    assert "deprecated" in capsys.readouterr().err
    files = [
        "stats.json",
        "manifest.json",
        *(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.jsonl")),
    ]
    assert len(files) > 3
    for f in files:
        assert (
            (tmp_path / "a" / f).read_bytes()
            == (tmp_path / "b" / f).read_bytes()
            == (tmp_path / "c" / f).read_bytes()
        ), f
    assert main(["merge", "--output_dir", str(tmp_path / "d"), "--shards", shards[0]]) == 1
    assert "cover" in capsys.readouterr().err
    assert main(["merge", "--output_dir", str(tmp_path / "d")]) == 2
    assert "--shards" in capsys.readouterr().err


def test_items_straddling_the_split_are_dropped_and_counted():
    from cavpref.data_prep.build import assign_splits, split_of_path
    from cavpref.media.spec import Source, combine, to_json

    cfg = PrepConfig(output_dir="x", test_fraction=0.5)
    paths = [f"v/{k}.mp4" for k in range(20)]
    train = next(p for p in paths if split_of_path(p, cfg) == "train")
    test = next(p for p in paths if split_of_path(p, cfg) == "test")

    def item(i, media):
        sources_ = sorted({s.path for s in sources(media)})
        it = BenchmarkItem(
            f"MVIT:base:{i}",
            "MVIT",
            "avqa",
            "Existential",
            "Q?",
            {"A": "x"},
            None,
            "base",
            0,
            to_json(media),
            source_ids=sources_,
        )
        pref = PreferenceExample(
            it.id, "MVIT", "avqa", "Existential", "Q?\nA. x", it.media, "c", "r", source_ids=sources_
        )
        return it, pref

    pairs = [item(0, combine(Source(train), Source(test))), item(1, Source(train)), item(2, Source(test))]
    items, prefs, dropped = assign_splits([i for i, _ in pairs], [p for _, p in pairs], cfg)
    assert dropped == {"MVIT": 1}
    assert [i.id for i in items["train"]] == [p.id for p in prefs["train"]] == ["MVIT:base:1"]
    assert [i.id for i in items["test"]] == [p.id for p in prefs["test"]] == ["MVIT:base:2"]


def test_shard_flags_take_the_issue_spelling():
    from cavpref.data_prep.cli import parse_config

    dashed = parse_config(["--world", "w", "--output_dir", "o", "--num-shards", "4", "--shard-index", "3"])
    under = parse_config(["--world", "w", "--output_dir", "o", "--num_shards", "4", "--shard_index", "3"])
    assert (dashed.num_shards, dashed.shard_index) == (under.num_shards, under.shard_index) == (4, 3)
    with pytest.raises(ValueError, match=r"shard_index 4 not in \[0, 4\)"):
        parse_config(["--output_dir", "o", "--num-shards", "4", "--shard-index", "4"])


def test_input_files_with_one_name_are_refused(tmp_path):
    world = make_world(tmp_path / "w")
    corrected = world / "music_avqa/json_update/avqa-train.json"  # MUSIC-AVQA ships such a corrected copy
    corrected.parent.mkdir()
    corrected.write_text((world / "music_avqa/json/avqa-train.json").read_text())
    original = str(world / "music_avqa/json/avqa-train.json")
    cfg = config(world, tmp_path / "o", music_avqa=[original, str(corrected)])
    with pytest.raises(ValueError, match=r"PrepConfig.music_avqa: .*json_update/avqa-train.json.* share"):
        build(cfg)
