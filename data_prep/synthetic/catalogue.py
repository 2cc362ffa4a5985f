"""What exists in the synthetic world: instruments, other sound sources and the AudioSet ontology.

Every entity has one visual signature (colour + shape) and one acoustic signature (a sound recipe), and
the same entity looks and sounds the same in every source (a piano in a MUSIC-AVQA clip is the piano of
the AudioSet "Piano" clips). That consistency is what a tiny model can learn, and what makes mismatched
audio/video (MVIT, MAIT, COT-Swap) detectable at all.

Instrument pitches are chosen so that no harmonic (k <= 4) of one instrument falls within 5 % of another
instrument's fundamental, and fundamentals are >= 11 % apart: an FFT (or a 128-bin mel spectrogram)
separates them, and "which instrument is sounding" has one answer.
"""

from __future__ import annotations

from dataclasses import dataclass

RGB = tuple[int, int, int]

SHAPES = ("circle", "square", "triangle", "diamond", "plus", "hbar", "vbar", "inv_triangle")
SLOTS = ("left", "middle", "right")
HIGHLIGHT: RGB = (255, 255, 255)  # outline of a sounding entity; no entity uses white


@dataclass(frozen=True)
class Instrument:
    """A MUSIC-AVQA instrument. ``rhythm_hz`` > 0: repeated decaying notes (plucked/struck, "rhythmic");
    0: a sustained tone. ``harmonics`` are partial amplitudes, the fundamental always the strongest."""

    name: str  # a real MUSIC-AVQA answer word (underscores as released)
    color: RGB
    shape: str
    f0: float
    harmonics: tuple[float, ...]
    rhythm_hz: float
    vibrato: float = 0.0  # relative depth of a 5 Hz vibrato
    noise: float = 0.0  # share of broadband noise in each note (drum skins)
    audioset: str | None = None  # mid of the matching AudioSet class, if the world has one


# Order matters: a world with ``num_instruments = N`` uses the first N.
INSTRUMENTS: tuple[Instrument, ...] = (
    Instrument("piano", (230, 40, 40), "square", 394.0, (1.0, 0.45, 0.2), 3.0, audioset="/m/05r5c"),
    Instrument(
        "violin", (245, 140, 20), "triangle", 879.0, (1.0, 0.6, 0.45, 0.3), 0.0, 0.006, audioset="/m/07y_7"
    ),
    Instrument("flute", (240, 220, 40), "vbar", 1120.0, (1.0, 0.12), 0.0, 0.004, audioset="/m/0l14j_"),
    Instrument("trumpet", (40, 200, 70), "diamond", 525.0, (1.0, 0.8, 0.6, 0.4), 0.0, audioset="/m/07gql"),
    Instrument(
        "cello", (40, 200, 220), "hbar", 164.0, (1.0, 0.7, 0.4, 0.25), 0.0, 0.006, audioset="/m/01xqw"
    ),
    Instrument("guzheng", (50, 90, 240), "inv_triangle", 1487.0, (1.0, 0.3, 0.15), 4.0),
    Instrument("drum", (220, 50, 220), "circle", 207.0, (1.0, 0.2), 2.0, noise=0.25, audioset="/m/026t6"),
    Instrument("accordion", (250, 150, 180), "plus", 309.0, (1.0, 0.55, 0.5, 0.3), 0.0, audioset="/m/0mkg"),
    Instrument("clarinet", (160, 240, 60), "circle", 249.0, (1.0, 0.0, 0.5, 0.0), 0.0, audioset="/m/01wy6"),
    Instrument("xylophone", (140, 60, 200), "square", 1674.0, (1.0, 0.0, 0.0, 0.3), 5.0, audioset="/m/0dwsp"),
    Instrument(
        "saxophone", (20, 150, 140), "triangle", 466.0, (1.0, 0.7, 0.5, 0.3), 0.0, 0.004, audioset="/m/06ncr"
    ),
    Instrument("banjo", (200, 200, 200), "diamond", 588.0, (1.0, 0.5, 0.4), 6.0, audioset="/m/018j2"),
)
INSTRUMENT_BY_NAME = {i.name: i for i in INSTRUMENTS}


@dataclass(frozen=True)
class SoundSource:
    """A non-instrument sound source (AVQA object, AudioSet event). ``sound`` names a recipe in
    :mod:`data_prep.synthetic.sounds`; ``event`` is the AVQA "Happening" phrase; ``used_for`` and
    ``why`` are the world's fixed world-knowledge facts about it."""

    name: str
    color: RGB
    shape: str
    sound: str
    event: str
    used_for: str
    why: str
    audioset: str | None = None


SOURCES: tuple[SoundSource, ...] = (
    SoundSource(
        "dog",
        (150, 90, 40),
        "circle",
        "bark",
        "A dog is barking",
        "Guarding the house",
        "The dog is warning a stranger",
        "/m/05tny_",
    ),
    SoundSource(
        "cat",
        (170, 170, 170),
        "triangle",
        "meow",
        "A cat is meowing",
        "Catching mice",
        "The cat is hungry",
        "/m/07qrkrw",
    ),
    SoundSource(
        "rooster",
        (200, 30, 90),
        "inv_triangle",
        "crow",
        "A rooster is crowing",
        "Laying eggs",
        "The sun is rising",
        "/m/07qn5dc",
    ),
    SoundSource(
        "bird",
        (250, 240, 120),
        "diamond",
        "chirp",
        "A bird is chirping",
        "Spreading seeds",
        "The bird is calling its flock",
        "/m/07pggtn",
    ),
    SoundSource(
        "car",
        (230, 90, 60),
        "hbar",
        "horn",
        "A car is honking",
        "Transportation",
        "The driver is warning a pedestrian",
        "/m/0912c9",
    ),
    SoundSource(
        "train",
        (90, 110, 250),
        "hbar",
        "train_horn",
        "A train is sounding its horn",
        "Carrying passengers",
        "The train is entering the station",
        "/m/0284vy3",
    ),
    SoundSource(
        "helicopter",
        (120, 220, 160),
        "plus",
        "rotor",
        "A helicopter is flying",
        "Air rescue",
        "The helicopter is taking off",
        "/m/09ct_",
    ),
    SoundSource(
        "police car",
        (60, 60, 250),
        "square",
        "siren",
        "A police car is sounding its siren",
        "Enforcing the law",
        "There is an emergency",
        "/m/04qvtq",
    ),
    SoundSource(
        "thunder",
        (255, 230, 0),
        "inv_triangle",
        "thunder",
        "Thunder is rumbling",
        "Nothing",
        "A storm is coming",
        "/m/0ngt1",
    ),
    SoundSource(
        "rain",
        (80, 160, 255),
        "vbar",
        "rain",
        "Rain is falling",
        "Watering plants",
        "It is raining",
        "/m/06mb1",
    ),
    SoundSource(
        "wind",
        (190, 230, 240),
        "hbar",
        "wind",
        "Wind is blowing",
        "Turning windmills",
        "The weather is windy",
        "/m/03m9d0z",
    ),
    SoundSource(
        "hands",
        (200, 120, 80),
        "plus",
        "clap",
        "People are clapping",
        "Holding things",
        "The audience is applauding",
        "/m/0l15bq",
    ),
)
SOURCE_BY_NAME = {s.name: s for s in SOURCES}
AVQA_SOURCES = ("dog", "cat", "rooster", "bird", "car", "train", "helicopter", "police car")

# ----------------------------------------------------------------------------- AudioSet ontology
# (mid, name, child mids, restrictions). Mids and names are the released ones; the world keeps only the
# branches it uses. Nodes that are not leaves of the released label set are marked "abstract" here exactly
# when they are absent from the released class_labels_indices.csv; "/t/dd99001" is a made-up blacklisted
# node (the released ontology has such nodes) so readers can prove they skip them.
ONTOLOGY: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("/m/0jbk", "Animal", ("/m/068hy", "/m/0ch8v", "/m/015p6"), ()),
    ("/m/068hy", "Domestic animals, pets", ("/m/0bt9lr", "/m/01yrx"), ()),
    ("/m/0bt9lr", "Dog", ("/m/05tny_",), ()),
    ("/m/05tny_", "Bark", (), ()),
    ("/m/01yrx", "Cat", ("/m/07qrkrw",), ()),
    ("/m/07qrkrw", "Meow", (), ()),
    ("/m/0ch8v", "Livestock, farm animals, working animals", ("/m/025rv6n",), ()),
    ("/m/025rv6n", "Fowl", ("/m/09b5t",), ()),
    ("/m/09b5t", "Chicken, rooster", ("/m/07qn5dc",), ()),
    ("/m/07qn5dc", "Crowing, cock-a-doodle-doo", (), ()),
    ("/m/015p6", "Bird", ("/m/020bb7",), ()),
    ("/m/020bb7", "Bird vocalization, bird call, bird song", ("/m/07pggtn",), ()),
    ("/m/07pggtn", "Chirp, tweet", (), ()),
    ("/m/04rlf", "Music", ("/m/04szw",), ()),
    (
        "/m/04szw",
        "Musical instrument",
        ("/m/05148p4", "/m/0l14_3", "/m/0l14md", "/m/085jw", "/m/01kcd", "/m/0fx80y", "/m/0mkg"),
        (),
    ),
    ("/m/05148p4", "Keyboard (musical)", ("/m/05r5c",), ()),
    ("/m/05r5c", "Piano", (), ()),
    ("/m/0l14_3", "Bowed string instrument", ("/m/07y_7", "/m/01xqw"), ()),
    ("/m/07y_7", "Violin, fiddle", (), ()),
    ("/m/01xqw", "Cello", (), ()),
    ("/m/0l14md", "Percussion", ("/m/026t6", "/m/0j45pbj", "/t/dd99001"), ()),
    ("/m/026t6", "Drum", (), ()),
    ("/m/0j45pbj", "Mallet percussion", ("/m/0dwsp",), ()),
    ("/m/0dwsp", "Marimba, xylophone", (), ()),
    ("/t/dd99001", "Crash cymbal", (), ("blacklist",)),
    ("/m/085jw", "Wind instrument, woodwind instrument", ("/m/0l14j_", "/m/06ncr", "/m/01wy6"), ()),
    ("/m/0l14j_", "Flute", (), ()),
    ("/m/06ncr", "Saxophone", (), ()),
    ("/m/01wy6", "Clarinet", (), ()),
    ("/m/01kcd", "Brass instrument", ("/m/07gql",), ()),
    ("/m/07gql", "Trumpet", (), ()),
    ("/m/0fx80y", "Plucked string instrument", ("/m/018j2",), ()),
    ("/m/018j2", "Banjo", (), ()),
    ("/m/0mkg", "Accordion", (), ()),
    ("/t/dd00041", "Sounds of things", ("/m/07yv9",), ("abstract",)),
    ("/m/07yv9", "Vehicle", ("/m/012f08", "/m/06d_3", "/m/0k5j"), ()),
    ("/m/012f08", "Motor vehicle (road)", ("/m/0k4j", "/m/03j1ly"), ()),
    ("/m/0k4j", "Car", ("/m/0912c9",), ()),
    ("/m/0912c9", "Vehicle horn, car horn, honking", (), ()),
    ("/m/03j1ly", "Emergency vehicle", ("/m/04qvtq",), ()),
    ("/m/04qvtq", "Police car (siren)", (), ()),
    ("/m/06d_3", "Rail transport", ("/m/07jdr",), ()),
    ("/m/07jdr", "Train", ("/m/0284vy3",), ()),
    ("/m/0284vy3", "Train horn", (), ()),
    ("/m/0k5j", "Aircraft", ("/m/09ct_",), ()),
    ("/m/09ct_", "Helicopter", (), ()),
    ("/m/059j3w", "Natural sounds", ("/m/03m9d0z", "/m/0jb2l", "/m/0838f"), ("abstract",)),
    ("/m/03m9d0z", "Wind", (), ()),
    ("/m/0jb2l", "Thunderstorm", ("/m/0ngt1",), ()),
    ("/m/0ngt1", "Thunder", (), ()),
    ("/m/0838f", "Water", ("/m/06mb1",), ()),
    ("/m/06mb1", "Rain", (), ()),
    ("/m/0dgw9r", "Human sounds", ("/m/0k65p",), ("abstract",)),
    ("/m/0k65p", "Hands", ("/m/0l15bq",), ()),
    ("/m/0l15bq", "Clapping", (), ()),
)
ONTOLOGY_BY_MID = {row[0]: row for row in ONTOLOGY}
# What a compositional task calls "unrelated": events under different supercategories.
SUPERCATEGORIES = {
    "/m/0jbk": "Animal",
    "/m/04rlf": "Music",
    "/m/07yv9": "Vehicle",
    "/m/059j3w": "Natural sounds",
    "/m/0dgw9r": "Human sounds",
}


def ancestors(mid: str) -> list[str]:
    """Mids from the top of the ontology down to ``mid`` (inclusive)."""
    parents = {child: row[0] for row in ONTOLOGY for child in row[2]}
    chain = [mid]
    while chain[-1] in parents:
        chain.append(parents[chain[-1]])
    return chain[::-1]


def supercategory(mid: str) -> str:
    return next(SUPERCATEGORIES[m] for m in reversed(ancestors(mid)) if m in SUPERCATEGORIES)


def segment_labels(mid: str) -> list[str]:
    """The labels a segment of event ``mid`` carries: the event and its labelled (non-restricted)
    ancestors, sorted as in the released csvs (``"/m/068hy,/m/07q6cd_,/m/0bt9lr,/m/0jbk"``)."""
    return sorted(m for m in ancestors(mid) if not ONTOLOGY_BY_MID[m][3])
