"""Look-up tables T1 / T2 / T3 of AVTrustBench (paper App. A.2), derived reproducibly from data.

- T2: supercategory groups ("Music", "Animal", "Sounds of things", ...) from the AudioSet ontology.
- T1: class -> classes unrelated to it = members of T2 that share no group with it. The paper built T1 by
  hand; here "unrelated" means "under different top-level supercategories", which a user can refine with
  an override file.
- T3: question category -> answer vocabulary (MUSIC-AVQA answers per category, plus AVQA options; the generic
  JSONL's options, or its answers when a question has none).

Answer/option strings of the QA datasets join T1/T2 through the class they name, found by normalised name
match (full name, then a comma-separated alias, then the longest word n-gram naming a class; unmatched
MUSIC-AVQA instruments fall back to the "Musical instrument" class). Strings that name no class stay out
of T1/T2: nothing is known about what they are unrelated to. The rules are in docs/readers.md.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cavpref.data import CATEGORIES
from cavpref.data_prep.readers.audioset import Ontology, read_ontology
from cavpref.data_prep.records import QA_SOURCES, QARecord

TABLES_VERSION = 1
DEFAULT_FILENAME = "lookup_tables.json"
TABLE_NAMES = ("t1", "t2", "t3")
# Words that never name a class on their own when matching n-grams of an option text.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "and",
        "or",
        "in",
        "on",
        "at",
        "to",
        "with",
        "by",
        "from",
        "for",
        "is",
        "are",
        "was",
        "sound",
        "sounds",
        "noise",
        "video",
    ]
)


class TablesError(ValueError):
    """A bad tables or override file; the message names the file and key."""


@dataclass
class TablesConfig:
    group_level: int = 0  # depth of the T2 groups in the ontology: 0 = top-level supercategories
    instrument_class: str = "Musical instrument"  # fallback class for unmatched MUSIC-AVQA instruments
    include_ontology_classes: bool = True  # T1/T2 list every usable ontology class, not only strings seen


def normalise(text: str) -> str:
    """Key for name matching: lower case, '_'/'-' as spaces, no punctuation or leading article, plural 's'
    dropped from each word (so 'Bagpipes', 'bagpipe' and 'acoustic_guitar' meet their classes)."""
    text = re.sub(r"[_\-]", " ", text.lower())
    text = re.sub(r"[^\w\s]", " ", text)
    words = re.sub(r"^(the|a|an) ", "", " ".join(text.split())).split()
    return " ".join(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words)


@dataclass
class LookupTables:
    t1: dict[str, list[str]] = field(default_factory=dict)
    t2: dict[str, list[str]] = field(default_factory=dict)
    t3: dict[str, list[str]] = field(default_factory=dict)
    mapping: dict[str, dict[str, str]] = field(default_factory=dict)  # dataset string -> {class, how}
    version: int = TABLES_VERSION

    def __post_init__(self):
        self._t1 = {normalise(k): v for k, v in self.t1.items()}
        self._groups: dict[str, list[str]] = defaultdict(list)
        for group, members in self.t2.items():
            for m in members:
                self._groups[normalise(m)].append(group)

    def unrelated(self, cls: str) -> list[str]:
        """Classes unrelated to ``cls`` (T1); [] when nothing is known about ``cls``."""
        return list(self._t1.get(normalise(cls), []))

    def groups_of(self, x: str) -> list[str]:
        return list(self._groups.get(normalise(x), []))

    def group_of(self, x: str) -> str | None:
        """The first T2 group holding ``x`` (a class or a mapped answer string), else None."""
        groups = self._groups.get(normalise(x))
        return groups[0] if groups else None

    def vocab(self, category: str) -> list[str]:
        """T3: the answer vocabulary of a question category."""
        if category not in CATEGORIES:
            raise KeyError(f"unknown category {category!r} (expected one of {CATEGORIES})")
        return list(self.t3.get(category, []))

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "t1": self.t1, "t2": self.t2, "t3": self.t3, "mapping": self.mapping}

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps(self.to_dict(), indent=1, sort_keys=True, ensure_ascii=False) + "\n", "utf-8"
        )
        return path

    @classmethod
    def load(cls, path: str | Path) -> LookupTables:
        data = _read_json_object(path)
        version = data.get("version")
        if version != TABLES_VERSION:
            raise TablesError(f"{path}: key 'version': expected {TABLES_VERSION}, got {version!r}")
        for name in TABLE_NAMES:
            _check_table(path, name, data.get(name), allow_null=False)
        return cls(
            t1=data["t1"], t2=data["t2"], t3=data["t3"], mapping=data.get("mapping", {}), version=version
        )


# ----------------------------------------------------------------------------- derivation


def _group_ids(ontology: Ontology, level: int) -> dict[str, list[str]]:
    """class id -> ids of its groups: its ancestors at depth ``level``; a class above that depth gets the
    groups below it (so a supercategory stays related to its members), a shallow leaf its own group."""
    layer = list(ontology.roots)
    for _ in range(level):
        nxt = [c for g in layer for c in ontology.classes[g].child_ids]
        layer = list(dict.fromkeys(nxt)) or layer
    groups: dict[str, list[str]] = defaultdict(list)
    for g in layer:
        for cid in ontology.descendants(g):
            if g not in groups[cid]:
                groups[cid].append(g)
    for cid in ontology.classes:  # shallower than the level: the groups below it, or itself
        if cid not in groups:
            below = set(ontology.descendants(cid))
            groups[cid] = [g for g in layer if g in below] or [cid]
    return groups


def _name_index(ontology: Ontology) -> tuple[dict[str, str], dict[str, str]]:
    """(normalised full name -> class name, normalised alias -> class name); first in file order wins."""
    full, alias = {}, {}
    for cls in ontology.classes.values():
        full.setdefault(normalise(cls.name), cls.name)
        for part in re.split(r",\s*", re.sub(r"\s*\([^)]*\)", "", cls.name)) + [cls.name.split(" (")[0]]:
            if normalise(part):
                alias.setdefault(normalise(part), cls.name)
    return full, alias


def match_class(text: str, full: dict[str, str], alias: dict[str, str]) -> tuple[str, str] | None:
    """(class name, how) for a dataset string: 'name', 'alias', then longest word n-gram 'ngram'."""
    key = normalise(text)
    if key in full:
        return full[key], "name"
    if key in alias:
        return alias[key], "alias"
    words = key.split()
    for n in range(len(words) - 1, 0, -1):
        for i in range(len(words) - n + 1):
            gram = " ".join(words[i : i + n])
            if gram in STOPWORDS:
                continue
            hit = full.get(gram) or alias.get(gram)
            if hit:
                return hit, "ngram"
    return None


def _surface_forms(strings: Iterable[str]) -> dict[str, str]:
    """normalised key -> the most frequent spelling (ties: alphabetically first)."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for s in strings:
        if s and s.strip():
            counts[normalise(s)][s.strip()] += 1
    return {k: min(c, key=lambda s: (-c[s], s)) for k, c in counts.items() if k}


def build_tables(
    records: Iterable[QARecord],
    ontology: Ontology | str | Path | None = None,
    config: TablesConfig | None = None,
) -> LookupTables:
    """Derive T1/T2/T3 from reader records (and the AudioSet ontology for T1/T2). Deterministic."""
    config = config or TablesConfig()
    records = list(records)
    if isinstance(ontology, (str, Path)):
        ontology = read_ontology(str(ontology))

    # T3: answer vocabulary per category.
    per_cat: dict[str, list[str]] = defaultdict(list)
    instruments: set[str] = set()
    for r in records:
        if r.source == "music_avqa" and r.category:
            per_cat[r.category].append(r.answer)
            instruments.update(normalise(v) for p, v in r.meta.get("slots", []) if p == "<Object>")
        elif r.source in ("avqa", "custom") and r.category:
            per_cat[r.category].extend(r.options or [r.answer])
    t3 = {c: sorted(_surface_forms(per_cat.get(c, [])).values(), key=str.casefold) for c in CATEGORIES}

    if ontology is None:
        return LookupTables(t3=t3)

    # T2: groups of ontology classes, then of dataset strings through the class they name.
    names = ontology.names()
    by_name: dict[str, list[str]] = defaultdict(list)  # class name -> group names
    for cid, gids in _group_ids(ontology, config.group_level).items():
        for g in gids:
            if names[g] not in by_name[names[cid]]:
                by_name[names[cid]].append(names[g])
    members: dict[str, list[str]] = {}
    if config.include_ontology_classes:
        for cls in ontology.classes.values():
            if not set(cls.restrictions) & {"abstract", "blacklist"}:
                members[cls.name] = by_name[cls.name]
    for r in records:
        for label in r.labels:
            if label in by_name:
                members[label] = by_name[label]

    full, alias = _name_index(ontology)
    dataset_strings = [r.answer for r in records if r.source in QA_SOURCES]
    dataset_strings += [o for r in records if r.source in QA_SOURCES for o in (r.options or [])]
    # the custom JSONL's labels may be any spelling of a class ("violin" for "Violin, fiddle"): mapped the same way
    dataset_strings += [x for r in records if r.source in ("custom", "custom_clips") for x in r.labels]
    mapping: dict[str, dict[str, str]] = {}
    for text in sorted(_surface_forms(dataset_strings).values(), key=str.casefold):
        hit = match_class(text, full, alias)
        if hit is None and normalise(text) in instruments and config.instrument_class in by_name:
            hit = (config.instrument_class, "instrument")
        mapping[text] = {"class": hit[0], "how": hit[1]} if hit else {"class": "", "how": "none"}
        if hit and normalise(text) not in {normalise(m) for m in members}:
            members[text] = by_name[hit[0]]

    t2: dict[str, list[str]] = defaultdict(list)
    for m in sorted(members, key=str.casefold):
        for g in members[m]:
            t2[g].append(m)
    t1 = {
        m: [o for o in sorted(members, key=str.casefold) if not set(members[o]) & set(members[m])]
        for m in sorted(members, key=str.casefold)
    }
    return LookupTables(t1=t1, t2=dict(sorted(t2.items())), t3=t3, mapping=mapping)


# ----------------------------------------------------------------------------- overrides


def _read_json_object(path: str | Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text("utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise TablesError(f"{path}: cannot read tables JSON: {err}") from err
    except RecursionError:
        raise TablesError(f"{path}: cannot read tables JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise TablesError(
            f"{path}: expected a JSON object with keys {TABLE_NAMES}, got {type(data).__name__}"
        )
    return data


def _check_table(path, name: str, table: Any, allow_null: bool) -> None:
    if not isinstance(table, dict):
        raise TablesError(f"{path}: key {name!r}: expected an object of key -> list of strings")
    for key, value in table.items():
        if value is None and allow_null:
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise TablesError(
                f"{path}: key {name}.{key!r}: expected a list of strings"
                f"{' or null' if allow_null else ''}, got {value!r}"
            )


def apply_overrides(tables: LookupTables, path: str | Path) -> LookupTables:
    """A user-edited file replaces derived entries key by key (``null`` deletes a key); others stay.

    The file has the saved shape (``{"version": 1, "t1": {...}, "t2": {...}, "t3": {...}}``, any subset;
    keys starting with ``_`` are comments). Returns new tables; ``tables`` is not changed.
    """
    data = _read_json_object(path)
    if data.get("version", TABLES_VERSION) != TABLES_VERSION:
        raise TablesError(f"{path}: key 'version': expected {TABLES_VERSION}, got {data['version']!r}")
    unknown = [k for k in data if k not in (*TABLE_NAMES, "version") and not k.startswith("_")]
    if unknown:
        raise TablesError(
            f"{path}: unknown key(s) {unknown} (expected {TABLE_NAMES}, 'version' or '_comment')"
        )
    merged = asdict(tables)
    for name in TABLE_NAMES:
        if name in data:
            _check_table(path, name, data[name], allow_null=True)
            for key, value in data[name].items():
                if value is None:
                    merged[name].pop(key, None)
                else:
                    merged[name][key] = list(value)
    return LookupTables(**merged)
