"""A small byte-level BPE tokenizer trained offline on the synthetic world's vocabulary.

Tiny models need a real tokenizer whose pieces cover what the tests, the quickstart and the synthetic benchmark
say (instrument names, positions, counts, yes/no, "None of the above", "followed by", the missing-stream
phrases), so that responses are a few tokens, not dozens of bytes. It uses Qwen2's pre-tokenizer and special
tokens, wrapped in ``Qwen2Tokenizer`` so it saves and reloads like any hub tokenizer.
"""

from __future__ import annotations

from collections.abc import Iterable

SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|AUDIO|>",
    "<|audio_bos|>",
    "<|audio_eos|>",
    "<|IMAGE|>",
    "<|VIDEO|>",
    "<|vision_bos|>",
    "<|vision_eos|>",
    "<|vision_pad|>",
]
NAMED_SPECIAL = {
    "audio_token": "<|AUDIO|>",
    "image_token": "<|IMAGE|>",
    "video_token": "<|VIDEO|>",
    "audio_bos_token": "<|audio_bos|>",
    "audio_eos_token": "<|audio_eos|>",
    "vision_bos_token": "<|vision_bos|>",
    "vision_eos_token": "<|vision_eos|>",
}

INSTRUMENTS = [
    "accordion",
    "acoustic guitar",
    "acoustic_guitar",
    "bagpipe",
    "banjo",
    "bassoon",
    "cello",
    "clarinet",
    "congas",
    "drum",
    "electric bass",
    "electric_bass",
    "erhu",
    "flute",
    "guzheng",
    "piano",
    "pipa",
    "saxophone",
    "suona",
    "trumpet",
    "tuba",
    "ukulele",
    "violin",
    "xylophone",
]
EVENTS = [
    "Speech",
    "Meow",
    "Bark",
    "Dog",
    "Cat",
    "Music",
    "Siren",
    "Ambulance (siren)",
    "Helicopter",
    "Doorbell",
    "Toilet flush",
    "Whistle",
    "Applause",
    "Cheering",
    "Crowd",
    "Rain",
    "Thunder",
    "Wind",
    "Water",
    "Car",
    "Engine",
    "Aeroplane",
    "Bird",
    "Moo",
    "Cow",
    "Laughter",
    "Footsteps",
    "Knock",
    "Bell",
    "Clock",
    "Beep",
    "Sine tone",
    "Noise",
    "Guitar",
    "Sewing machine",
    "Motorboat",
    "Sailboat",
]
NUMBERS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "more than ten",
    "Zero",
    "One",
    "Two",
    "Three",
    "Four",
    "Five",
    "Six",
    "Seven",
    "Eight",
    "Nine",
    "Ten",
] + [str(i) for i in range(21)]
WORDS = [
    "yes",
    "no",
    "Yes",
    "No",
    "left",
    "middle",
    "right",
    "Left",
    "Middle",
    "Right",
    "indoor",
    "outdoor",
    "simultaneously",
    "loudest",
    "lowest",
    "leftest",
    "rightest",
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "last",
    "after",
    "before",
    "louder",
    "higher",
    "lower",
    "quieter",
    "red",
    "green",
    "blue",
    "yellow",
    "black",
    "white",
    "circle",
    "square",
    "triangle",
    "stripes",
    "moving",
    "static",
    "tone",
    "beat",
]
PHRASES = [
    "None of the above",
    "None of the above.",
    "The audio is missing.",
    "The video is missing.",
    "The audio is missing",
    "The video is missing",
    "I cannot answer.",
    "The choices are irrelevant.",
    "The video and question are mismatched.",
    "Provided options are incorrect.",
    "No option is correct.",
    "Irrelevant options.",
    "Both of them occur at the same time.",
    "Both events occur simultaneously.",
    "If the correct answer is not present, respond with None of the above.",
    "If all the options are incorrect, answer (E) None of the above.",
    "Answer with the option's letter from the given choices directly.",
    "What is the sequence of events in the video?",
    "How many instruments are sounding in the video?",
    "How many sounding instruments are there in the video?",
    "Where is the loudest instrument?",
    "Which instrument sounds first?",
    "Which is the musical instrument that sounds at the same time as the",
    "Is the instrument on the left louder than the instrument on the right?",
    "Is there a sound in the video?",
    "What are the main sources of sound in the video?",
    "Where is the performance?",
    "What happened in the video?",
    "Is this sound from the instrument in the video?",
    "Are there",
    "in the video",
    "in the audio",
    "You are a helpful assistant.",
    (
        "You are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, capable of perceiving auditory and "
        "visual inputs, as well as generating text and speech."
    ),
    "Watch the video and listen to the audio.",
    "Options:",
    "Answer:",
    "Question:",
] + ["system\n", "user\n", "assistant\n"] * 8  # chat-template role names


def default_corpus(extra: Iterable[str] = ()) -> list[str]:
    """The built-in corpus plus ``extra`` lines (e.g. the synthetic world's own vocabulary)."""
    lines = list(PHRASES) + WORDS + NUMBERS
    for a in INSTRUMENTS + EVENTS:
        lines.append(f"The {a} is playing. {a.capitalize()} followed by {a}.")
        for b in ("piano", "violin", "Speech", "Meow"):
            lines.append(f"{a} followed by {b}. {b} is followed by {a}.")
    for i, letter in enumerate("ABCDE"):
        lines.append(f"({letter}) {letter}. {letter} {letter}) Option {letter}: {NUMBERS[i]}")
    return lines + [str(x) for x in extra]


def train_qwen2_bpe(extra_corpus: Iterable[str], vocab_size: int, special_tokens: list[str] | None = None):
    """A ``tokenizers`` byte-level BPE with Qwen2's normaliser and pre-tokenizer, trained on ``default_corpus``
    plus ``extra_corpus`` (deterministic): the pieces of every offline tokenizer built here."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=special_tokens or [],
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(default_corpus(extra_corpus), trainer)
    return tok


def train_tokenizer(extra_corpus: Iterable[str] = (), vocab_size: int = 1000):
    """Train a byte-level BPE (Qwen2 pre-tokenizer) and wrap it as a ``Qwen2Tokenizer``. Deterministic."""
    from tokenizers import AddedToken
    from transformers import Qwen2Tokenizer

    tok = train_qwen2_bpe(extra_corpus, vocab_size, SPECIAL_TOKENS)
    qt = Qwen2Tokenizer(
        vocab=tok.get_vocab(), merges=_merges(tok), extra_special_tokens=dict(NAMED_SPECIAL), errors="replace"
    )
    qt.add_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    return qt


def _merges(tok) -> list[tuple[str, str]]:
    import json

    merges = json.loads(tok.to_str())["model"]["merges"]
    return [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]
