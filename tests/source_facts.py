"""Facts of the released source datasets (../shared/SOURCE_FORMATS.md), written out independently of the
code under test so the synthetic world's tests compare against the real vocabularies."""

MUSIC_AVQA_INSTRUMENTS = frozenset({
    "accordion", "acoustic_guitar", "bagpipe", "banjo", "bassoon", "cello", "clarinet", "congas", "drum",
    "electric_bass", "erhu", "flute", "guzheng", "piano", "pipa", "saxophone", "suona", "trumpet", "tuba",
    "ukulele", "violin", "xylophone",
})
MUSIC_AVQA_ANSWERS = MUSIC_AVQA_INSTRUMENTS | {
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "more than ten",
    "yes", "no", "left", "middle", "right", "indoor", "outdoor", "simultaneously",
}
