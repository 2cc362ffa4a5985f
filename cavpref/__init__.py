"""cavpref: trustworthy audio-visual LLMs — AVTrustBench data, CAVPref training, evaluation."""

__version__ = "0.1.0"
